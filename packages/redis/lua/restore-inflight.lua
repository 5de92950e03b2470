-- Puts the messages of an abandoned in-flight list back at the head of the queue list they came from, in the order
-- they were taken (the first taken is consumed first again), and forgets the registry entry. A list that is gone
-- (its claim was recorded) leaves only the entry to forget.
local registry, inflight, source = KEYS[1], KEYS[2], KEYS[3]
local n = 0
while redis.call('LMOVE', inflight, source, 'LEFT', 'RIGHT') do n = n + 1 end
redis.call('ZREM', registry, ARGV[1])
return n
