-- The fenced part of both beat commits (prepended to each): KEYS[1] lease, KEYS[2] state; ARGV[1] token, ARGV[2]
-- entry, ARGV[3] tick. Returns -1 when the lease is not the caller's, 0 when the tick is not after the recorded one;
-- records it otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local recorded = redis.call('HGET', KEYS[2], ARGV[2])
if recorded and tonumber(recorded) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])

