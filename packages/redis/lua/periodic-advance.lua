local fields = redis.call('HMGET', KEYS[1], 'cycle', 'step')
if not fields[1] then return 'absent' end
if fields[1] ~= ARGV[1] then return 'superseded' end
if tonumber(fields[2]) > tonumber(ARGV[2]) then return 'stale' end
redis.call('HSET', KEYS[1], 'step', ARGV[3])
redis.call('HDEL', KEYS[1], 'token', 'until')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 'advanced'
