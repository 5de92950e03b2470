local index = KEYS[2]
local lease_us, vt_us = tonumber(ARGV[1]), tonumber(ARGV[2])
local tags = {}
for a = 3, #ARGV, 2 do tags[#tags + 1] = ARGV[a] end
local current = scores_of(index, tags)
local score = lease_score(lease_us, vt_us)
local rescore, lost = {}, {}
for k = 1, #tags do
  if same_score(current[k], ARGV[2 * k + 2]) then
    rescore[#rescore + 1] = score
    rescore[#rescore + 1] = tags[k]
  else
    lost[#lost + 1] = k
  end
end
if #rescore > 0 then
  for first = 1, #rescore, 2000 do
    redis.call('ZADD', index, 'XX', unpack(rescore, first, math.min(first + 1999, #rescore)))
  end
end
return { score, lost }
