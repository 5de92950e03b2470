local now_ms = now()
local due = now_ms + tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], due, ARGV[2])
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == ARGV[2] then redis.call('PUBLISH', ARGV[3], tostring(due)) end
return due
