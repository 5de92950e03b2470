local now_ms = now()
local restored = 0
for a = 2, #ARGV, 4 do
  local tag, holder, target, envelope = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local _, score = parse_holder(holder)
  local deadline = redis.call('ZSCORE', KEYS[3], tag)
  if redis.call('HGET', KEYS[4], tag) == holder and deadline and tonumber(deadline) <= now_ms
     and same_score(redis.call('ZSCORE', KEYS[2], tag), score) and redis.call('HEXISTS', KEYS[1], tag) == 1 then
    forget(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tag)
    redis.call('RPUSH', ARGV[1] .. target, envelope)
    restored = restored + 1
  end
end
return restored
