local lists = #KEYS - 2
for i = 1, lists do redis.call('LPUSH', KEYS[i + 2], ARGV[i + 4]) end
local channels = tonumber(ARGV[4])
for i = 1, channels do
  local at = 4 + lists + (i - 1) * 2
  redis.call('PUBLISH', ARGV[at + 1], ARGV[at + 2])
end
return 1
