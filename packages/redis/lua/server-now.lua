-- The server's clock, ms (prepended to the periodic scripts that need it).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
