if ARGV[2] ~= '' then
  local done = settle_one(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
  if done ~= 1 then return done end
end
redis.call('LPUSH', KEYS[3], ARGV[3])
return 1
