if not redis.call('SET', KEYS[4], ARGV[1], 'PX', tonumber(ARGV[2]), 'NX') then return false end
local _, _, now_s = now()
local ceil = now_s - tonumber(ARGV[3])
local old = redis.call('ZREVRANGEBYSCORE', KEYS[2], string.format('%.6f', ceil), 0, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for a = 1, #old, 2 do
  local tag = old[a]
  if redis.call('HEXISTS', KEYS[3], tag) == 0 then
    out[#out + 1] = tag
    out[#out + 1] = old[a + 1]
    out[#out + 1] = redis.call('HGET', KEYS[1], tag)
  end
end
return out
