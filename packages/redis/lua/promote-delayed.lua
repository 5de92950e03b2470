local now_ms = now()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms, 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do
  local colon = string.find(m, ':', 1, true)
  local n = tonumber(string.sub(m, 1, colon - 1))
  redis.call('LPUSH', ARGV[1] .. string.sub(m, colon + 1, colon + n), string.sub(m, colon + n + 1))
  redis.call('ZREM', KEYS[1], m)
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = -1
if nxt[2] then wait = math.max(0, tonumber(nxt[2]) - now_ms) end
return { #due, wait }
