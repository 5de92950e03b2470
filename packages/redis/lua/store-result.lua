local current = redis.call('GET', KEYS[1])
if current then
  local status = string.match(current, '^{"status": "([^"]*)"')
  if not status then
    local ok, meta = pcall(cjson.decode, current)
    if ok and type(meta) == 'table' then status = meta['status'] end
  end
  if status == 'SUCCESS' then return 0 end
end
local ttl = tonumber(ARGV[2])
if ttl > 0 then redis.call('SETEX', KEYS[1], ttl, ARGV[1]) else redis.call('SET', KEYS[1], ARGV[1]) end
redis.call('PUBLISH', KEYS[1], ARGV[1])
return 1
