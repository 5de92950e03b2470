local now_ms = now()
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now_ms, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, tag in ipairs(expired) do
  local h = redis.call('HGET', KEYS[4], tag)
  local tok, score = parse_holder(h)
  local value = redis.call('HGET', KEYS[1], tag)
  if tok == nil or not value or not same_score(redis.call('ZSCORE', KEYS[2], tag), score) then
    redis.call('ZREM', KEYS[3], tag)
    unpin_if_alone(KEYS[3])
    if h then redis.call('HDEL', KEYS[4], tag) end
  else
    out[#out + 1] = tag
    out[#out + 1] = h
    out[#out + 1] = value
  end
end
return out
