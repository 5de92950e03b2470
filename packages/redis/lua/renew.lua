local lease_ms = tonumber(ARGV[1])
local now_ms, now_sec = now()
local lost = {}
for a = 2, #ARGV, 2 do
  local tag, token = ARGV[a], ARGV[a + 1]
  if owned(KEYS[1], KEYS[2], KEYS[4], tag, token) then
    local _, _, queue = parse_holder(redis.call('HGET', KEYS[4], tag))
    redis.call('ZADD', KEYS[2], 'XX', now_sec, tag)
    redis.call('ZADD', KEYS[3], now_ms + lease_ms, tag)
    redis.call('HSET', KEYS[4], tag, token .. '\n' .. now_sec .. '\n' .. queue)
  else
    local tok = parse_holder(redis.call('HGET', KEYS[4], tag))
    if tok == token then
      redis.call('HDEL', KEYS[4], tag)
      redis.call('ZREM', KEYS[3], tag)
      unpin_if_alone(KEYS[3])
    end
    lost[#lost + 1] = token
  end
end
return lost
