local prior = replayed(KEYS[6])
if prior then return prior end
local tag, token = ARGV[1], ARGV[2]
if token ~= '' then
  if not owned(KEYS[1], KEYS[2], KEYS[4], tag, token) then return remember(KEYS[6], 0) end
  forget(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tag)
end
redis.call('LPUSH', KEYS[5], ARGV[3])
return remember(KEYS[6], 1)
