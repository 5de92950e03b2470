-- a restore_visible under way elsewhere holds Kombu's mutex: stand aside, as Kombu does
if ARGV[1] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then return false end
local _, now_us = now()
local ceil = (now_us - tonumber(ARGV[2])) / 1000000
local old = redis.call('ZREVRANGEBYSCORE', KEYS[2], string.format('%.6f', ceil), 0, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
-- ms until the first delivery not yet stale will be (-1: none), so the caller sweeps again then, not on a fixed beat
local next_ms = -1
local first = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. string.format('%.6f', ceil), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if first[2] then next_ms = math.ceil((tonumber(first[2]) - ceil) * 1000) end
local out = { next_ms }
for a = 1, #old, 2 do
  out[#out + 1] = old[a]
  out[#out + 1] = old[a + 1]
  out[#out + 1] = redis.call('HGET', KEYS[1], old[a])
end
return out
