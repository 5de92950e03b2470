local cycle = redis.call('HGET', KEYS[1], 'cycle')
if not cycle then return 0 end
if ARGV[1] ~= '' and cycle ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
