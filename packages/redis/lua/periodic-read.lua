local fields = redis.call('HMGET', KEYS[1], 'cycle', 'step', 'token', 'until')
if not fields[1] then return false end
local claimed = false
if fields[3] and tonumber(fields[4] or '0') > now then claimed = fields[3] end
return {fields[1], fields[2], claimed}
