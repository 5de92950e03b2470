local total = redis.call('ZCARD', KEYS[1])
if total > tonumber(ARGV[1]) then return {total} end
local counts = {}
for start = 0, total - 1, 500 do
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], start, start + 499)) do
    local digits = string.match(member, '^(%d+):')
    if digits then
      local list = string.sub(member, #digits + 2, #digits + 1 + tonumber(digits))
      counts[list] = (counts[list] or 0) + 1
    end
  end
end
local out = {total}
for list, n in pairs(counts) do
  out[#out + 1] = list
  out[#out + 1] = n
end
return out
