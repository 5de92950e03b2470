local done = settle_one(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
if done ~= 1 then return done end
if ARGV[3] == 'head' then
  redis.call('RPUSH', KEYS[3], ARGV[4])
else
  redis.call('LPUSH', KEYS[3], ARGV[4])
end
return 1
