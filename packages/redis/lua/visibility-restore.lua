local prefix = ARGV[1]
-- One atomic step, so kq never holds Kombu's mutex between calls (a process killed in between would block every
-- sweep, Python's too, for unacked_mutex_expire): it only stands aside while another process holds it.
if ARGV[2] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local restored = 0
local a = 3
while a <= #ARGV do
  local tag, score, envelope, n = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  if redis.call('ZSCORE', KEYS[2], tag) == score then
    redis.call('HDEL', KEYS[1], tag)
    redis.call('ZREM', KEYS[2], tag)
    unpin_if_alone(KEYS[2])
    for t = 0, n - 1 do
      redis.call(ARGV[a + 4 + 2 * t], prefix .. ARGV[a + 5 + 2 * t], envelope)
    end
    restored = restored + 1
  end
  a = a + 4 + 2 * n
end
return restored
