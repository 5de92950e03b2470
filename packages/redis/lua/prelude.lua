-- Shared functions, put before most of the transport's scripts (see lua-scripts.ts).
--
-- A delivery kq holds has no record of kq's own: it is Kombu's `unacked[tag]` (the envelope, exchange and routing
-- key) and `unacked_index[tag]`, whose score is the lease. Kombu's restore_visible restores an entry whose score is
-- below now - visibility_timeout, so kq scores a claim lease_deadline - visibility_timeout (a lease longer than the
-- visibility timeout counts as that long): Python workers and kq's own sweep both bring it back exactly when the
-- lease ran out, and never while the holder keeps renewing. The score is also the fence: every claim and renewal
-- writes a later one (server time only grows, and a message is claimed again only after its lease ran out or it was
-- given back), the holder remembers what it wrote, and a settle acts only while the score is still that one. A
-- Python worker's claim writes its own clock's time, which matches a kq score only by chance, to the microsecond.

-- server time, in ms; and in whole microseconds
local function now()
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return math.floor(us / 1000), us
end

-- the unacked_index score of a lease of `lease_us` taken now (server time `us` when known), as "<s>.<us>" (exact
-- in a double at today's epoch)
local function lease_score(lease_us, vt_us, us)
  if not us then us = select(2, now()) end
  -- the fleet's visibility timeout bounds every hold: a lease longer than it lasts only as long (renewals come every
  -- third of the shorter of the two), so the score is never later than now
  if lease_us > vt_us then lease_us = vt_us end
  local at = us + lease_us - vt_us
  local s = math.floor(at / 1000000)
  return string.format('%d.%06d', s, at - s * 1000000)
end

-- scores compared as numbers: kq writes "<s>.<us>", Redis answers ZSCORE with %.17g of the same double
local as_number = {}
local function same_score(a, b)
  if not (a and b) then return false end
  if a == b then return true end
  local x, y = as_number[a], as_number[b]
  if not x then x = tonumber(a); as_number[a] = x end
  if not y then y = tonumber(b); as_number[b] = y end
  return x == y
end

-- a variadic command over a list of arguments, in chunks (Lua's unpack has a stack limit)
local function each_chunk(command, key, items)
  for first = 1, #items, 2000 do
    redis.call(command, key, unpack(items, first, math.min(first + 1999, #items)))
  end
end

-- Redis keeps a sorted set of up to 128 short members as a listpack, where every insert scans and rewrites the whole
-- set: a claim batch of 64 cost 175-375 µs there against 23 µs in a skiplist (Redis 7.0, measured), most of the
-- claim's time. One member longer than 64 bytes (zset-max-listpack-value) keeps unacked_index a skiplist while more
-- than a few claims are held. It scores +inf, so no scan by time (Kombu's restore_visible, kq's sweep) ever reaches
-- it, nor a settle or a renewal (they name tags); it goes with the last real member. A set of a few (one claim at a
-- time) stays a listpack, which is cheaper there.
local PIN = '_kq.pin: keeps unacked_index a skiplist, where a listpack would make every insert scan the whole set'
local PIN_ABOVE = 16

local function pin_for(index, adding)
  if adding + redis.call('ZCARD', index) > PIN_ABOVE then redis.call('ZADD', index, 'NX', 'inf', PIN) end
end

local function unpin_if_alone(index)
  if redis.call('ZCARD', index) == 1 and redis.call('ZSCORE', index, PIN) then redis.call('DEL', index) end
end

-- the scores of `tags` in one call (ZMSCORE, Redis 6.2+; one ZSCORE each on older servers)
local function scores_of(index, tags)
  local out = {}
  for first = 1, #tags, 2000 do
    local last = math.min(first + 1999, #tags)
    local got = redis.pcall('ZMSCORE', index, unpack(tags, first, last))
    if type(got) == 'table' and got.err then
      got = {}
      for k = first, last do got[k - first + 1] = redis.call('ZSCORE', index, tags[k]) end
    end
    for k = first, last do out[k] = got[k - first + 1] end
  end
  return out
end

-- Settles of claims, each pair (tag, score the holder last wrote) in order: 1 when the claim was ours and is now
-- forgotten (unacked and unacked_index), 0 when the tag is gone (acked already, e.g. a settle ioredis re-sent after a
-- reconnect, or taken back by a sweep: either way nothing is left to do), -1 when another claim holds it now (the
-- score differs: the lease ran out and the message was claimed again). Three calls for the whole batch.
local function settle_many(unacked, index, settles)
  local n = #settles / 2
  local results = {}
  if n == 0 then return results end
  local tags = {}
  for k = 1, n do tags[k] = settles[2 * k - 1] end
  local current = scores_of(index, tags)
  local seen, drop = {}, {}
  for k = 1, n do
    local tag = tags[k]
    if seen[tag] or not current[k] then
      results[k] = 0
    elseif same_score(current[k], settles[2 * k]) then
      seen[tag] = true
      drop[#drop + 1] = tag
      results[k] = 1
    else
      results[k] = -1
    end
  end
  if #drop > 0 then
    -- index and unacked are written and removed together (by Kombu too)
    each_chunk('ZREM', index, drop)
    each_chunk('HDEL', unacked, drop)
    unpin_if_alone(index)
  end
  return results
end

-- 1 and the claim forgotten when (tag, score) is still ours; otherwise 0 (gone) or -1 (held by another claim)
local function settle_one(unacked, index, tag, score)
  local current = redis.call('ZSCORE', index, tag)
  if not current then return 0 end
  if not same_score(current, score) then return -1 end
  redis.call('ZREM', index, tag)
  redis.call('HDEL', unacked, tag)
  unpin_if_alone(index)
  return 1
end
