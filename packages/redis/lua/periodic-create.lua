if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'cycle', ARGV[1], 'step', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
