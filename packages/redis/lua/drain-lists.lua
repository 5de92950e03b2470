local total = 0
for _, key in ipairs(KEYS) do
  total = total + redis.call('LLEN', key)
  redis.call('DEL', key)
end
return total
