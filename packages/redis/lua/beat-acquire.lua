local current = redis.call('GET', KEYS[1])
if current then
  local colon = string.find(current, ':', 1, true)
  if colon and string.sub(current, colon + 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {tonumber(string.sub(current, 1, colon - 1)), 0}
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], epoch .. ':' .. ARGV[1], 'PX', ARGV[2])
return {epoch, 0}
