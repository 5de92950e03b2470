local fields = redis.call('HMGET', KEYS[1], 'cycle', 'step', 'token', 'until')
if not fields[1] then return 'absent' end
if fields[1] ~= ARGV[1] then return 'superseded' end
local step = tonumber(fields[2])
local wanted = tonumber(ARGV[2])
if step > wanted then return 'stale' end
if step == wanted and fields[3] and fields[3] ~= ARGV[3] and tonumber(fields[4] or '0') > now then return 'busy' end
redis.call('HSET', KEYS[1], 'step', ARGV[2], 'token', ARGV[3], 'until', now + tonumber(ARGV[4]))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 'current'
