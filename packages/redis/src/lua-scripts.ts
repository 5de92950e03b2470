import { LuaScript } from './lua-script';

/*
 * Every multi-key state change of the transport is one of these scripts, so it is atomic on the server and costs one
 * round trip. Conventions shared by all of them:
 *
 * - Time is the server's (`TIME`), so processes with skewed clocks agree on leases and due times. Kombu writes
 *   `unacked_index` scores from the client clock in seconds; kq writes server seconds with microseconds.
 * - Claims kq holds have two kq-only records besides Kombu's `unacked`/`unacked_index`:
 *     leases  (zset)  tag -> lease deadline (epoch ms)
 *     holders (hash)  tag -> "<token>\n<unacked_index score when last written>\n<queue>"
 *   The token is new for every claim (the delivery tag is not: Kombu's tag is per message and survives restores),
 *   so a settle from an earlier claim of the same message is refused. The score snapshot detects a Python worker
 *   that restored and re-claimed the message meanwhile (it rewrites `unacked_index` but knows nothing of holders).
 */

/**
 * The member that keeps `unacked_index` and `leases` in Redis's skiplist encoding (see `pin` below): longer than
 * `zset-max-listpack-value` (64 bytes by default), scored +inf. Exported for tests.
 */
export const SKIPLIST_PIN = '_kq.pin: keeps this sorted set a skiplist, as a listpack would make every insert scan the set';

const PRELUDE = `
local function now()
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  return ms, t[1] .. '.' .. string.format('%06d', tonumber(t[2])), tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- holder record: token, score snapshot, queue
local function parse_holder(h)
  if not h then return nil end
  local a = string.find(h, '\\n', 1, true)
  if not a then return nil end
  local b = string.find(h, '\\n', a + 1, true)
  if not b then return nil end
  return string.sub(h, 1, a - 1), string.sub(h, a + 1, b - 1), string.sub(h, b + 1)
end

-- scores compared as numbers: kq writes "<s>.<us>", Redis answers ZSCORE with %.17g of the same double
local function same_score(a, b)
  return a and b and tonumber(a) == tonumber(b)
end

-- true when the claim (tag, token) is still ours: our holder record, and unacked/unacked_index untouched since
local function owned(unacked, index, holders, tag, token)
  local tok, score = parse_holder(redis.call('HGET', holders, tag))
  if tok == nil or tok ~= token then return false end
  if not same_score(redis.call('ZSCORE', index, tag), score) then return false end
  return redis.call('HEXISTS', unacked, tag) == 1
end

-- a variadic command over a list of arguments, in chunks (Lua's unpack has a stack limit)
local function each_chunk(command, key, items)
  for first = 1, #items, 2000 do
    redis.call(command, key, unpack(items, first, math.min(first + 1999, #items)))
  end
end

-- Redis keeps a sorted set of up to 128 short members as a listpack, where every insert scans the whole set, so a
-- claim adding a batch of 64 cost time quadratic in the claims held: most of Redis's time whenever few were held.
-- One member longer than 64 bytes keeps unacked_index and leases skiplists. It scores +inf, so the scans by time
-- (Kombu's restore_visible, kq's lease and visibility scans) never reach it, and it goes with the last real member.
local function pin(key)
  redis.call('ZADD', key, 'NX', 'inf', '${SKIPLIST_PIN}')
end

local function unpin_if_alone(key)
  if redis.call('ZCARD', key) == 1 and redis.call('ZSCORE', key, '${SKIPLIST_PIN}') then redis.call('DEL', key) end
end

-- acks of claims, each pair (tag, token) in order: 1 when the claim was ours and is now forgotten, 0 when stale (our
-- own void records are dropped then). One HMGET and four variadic deletes for the whole batch instead of six calls
-- per claim: a flood of short tasks spends much of Redis's time here.
local function ack_many(unacked, index, leases, holders, settles)
  local n = #settles / 2
  local results = {}
  if n == 0 then return results end
  local tags = {}
  for k = 1, n do tags[k] = settles[2 * k - 1] end
  local records = redis.call('HMGET', holders, unpack(tags))
  local gone = {}
  local drop_holder, drop_index = {}, {}
  for k = 1, n do
    local tag, token = tags[k], settles[2 * k]
    results[k] = 0
    if not gone[tag] then
      local tok, score = parse_holder(records[k] or nil)
      if tok ~= nil and tok == token then
        gone[tag] = true
        drop_holder[#drop_holder + 1] = tag
        if same_score(redis.call('ZSCORE', index, tag), score) then
          drop_index[#drop_index + 1] = tag
          results[k] = 1
        end
      end
    end
  end
  if #drop_holder > 0 then
    each_chunk('HDEL', holders, drop_holder)
    each_chunk('ZREM', leases, drop_holder)
    unpin_if_alone(leases)
  end
  if #drop_index > 0 then
    -- index and unacked are written and removed together (by Kombu too): a matching score means the entry is there
    each_chunk('ZREM', index, drop_index)
    each_chunk('HDEL', unacked, drop_index)
    unpin_if_alone(index)
  end
  return results
end

local function forget(unacked, index, leases, holders, tag)
  redis.call('HDEL', unacked, tag)
  redis.call('ZREM', index, tag)
  redis.call('ZREM', leases, tag)
  redis.call('HDEL', holders, tag)
  unpin_if_alone(index)
  unpin_if_alone(leases)
end

-- Replies remembered under a request id, so a script ioredis re-sends after a reconnect (its first run's reply was
-- lost with the connection) answers what the first run did instead of reporting its own effects as stale.
local function replayed(key)
  local prior = redis.call('GET', key)
  if prior then return cjson.decode(prior) end
  return nil
end

local function remember(key, value)
  redis.call('SET', key, cjson.encode(value), 'PX', 120000)
  return value
end

local ESC = { ['"'] = '\\\\"', ['\\\\'] = '\\\\\\\\', ['\\b'] = '\\\\b', ['\\f'] = '\\\\f', ['\\n'] = '\\\\n', ['\\r'] = '\\\\r', ['\\t'] = '\\\\t' }
-- a JSON string as Python writes it (ASCII escapes; UTF-8 bytes are left as they are)
local function pystr(s)
  return '"' .. (string.gsub(s, '[%c"\\\\]', function(c) return ESC[c] or string.format('\\\\u%04x', string.byte(c)) end)) .. '"'
end
`;

/**
 * Takes up to `max` messages: priority steps first, then queues in the given order, rotating a served queue to the
 * back; records each in Kombu's `unacked`/`unacked_index` and in kq's lease records, in the same atomic step (Kombu
 * pops with BRPOP and records in a second round trip, losing the message if it dies in between).
 * An envelope that is not a JSON object with `properties.delivery_tag` is moved to the quarantine list.
 *
 * Acks that were waiting to be sent ride along and are applied first (one script call instead of two).
 *
 * KEYS: unacked, unacked_index, leases, holders, quarantine, request key (for the acks' replies)
 * ARGV: prefix, sep, max, noAck(0|1), tokenBase, leaseMs, nSteps, steps..., nQueues, queues...,
 *       nPre(0|1), [preQueue, preStep, preRaw, preToken]  (a message BRPOP already popped, recorded first; with a
 *       preToken the caller already has it, so it is recorded under that token and its raw is not sent back),
 *       nAcks, (tag, token)..., close
 * A queue's list key is `prefix .. queue .. close [.. sep .. step]`: Kombu's with prefix and close as they are, the
 * cluster layout's `{queue}` with `{` appended to the prefix and close `}`.
 * Returns: { {queue, step, raw, token, tag, ...}, {queue, reason, ...}, {ack result (1|0), ...} }
 */
export const CLAIM = new LuaScript(
  'claim',
  PRELUDE +
    `
local unacked, index, leases, holders, quarantine = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local prefix, sep = ARGV[1], ARGV[2]
local max = tonumber(ARGV[3])
local noack = ARGV[4] == '1'
local token_base, lease_ms = ARGV[5], tonumber(ARGV[6])
local i = 7
local steps = {}
for s = 1, tonumber(ARGV[i]) do steps[s] = ARGV[i + s] end
i = i + #steps + 1
local queues = {}
local nq = tonumber(ARGV[i])
for q = 1, nq do queues[q] = ARGV[i + q] end
i = i + nq + 1
local npre = tonumber(ARGV[i])
local a = i + 1 + 4 * npre
local nacks = tonumber(ARGV[a])
local acked = {}
if nacks > 0 then
  acked = replayed(KEYS[6])
  if not acked then
    local settles = {}
    for k = 1, 2 * nacks do settles[k] = ARGV[a + k] end
    acked = ack_many(unacked, index, leases, holders, settles)
    remember(KEYS[6], acked)
  end
end

local now_ms, now_sec = now()
local claims, bad = {}, {}
local taken, seq = 0, 0
local rec_index, rec_unacked, rec_leases, rec_holders = {}, {}, {}, {}

local close = ARGV[#ARGV]
local function key_for(q, step)
  if tonumber(step) == 0 then return prefix .. q .. close end
  return prefix .. q .. close .. sep .. step
end

local function reject(q, key, reason, raw)
  redis.call('LPUSH', quarantine, cjson.encode({ queue = q, key = key, reason = reason, at = now_ms, raw = raw }))
  bad[#bad + 1] = q
  bad[#bad + 1] = reason
end

-- The fields the unacked record needs, without decoding the whole envelope when it is written the way Kombu (and kq)
-- write it: properties last, delivery_tag its last key, delivery_info {"exchange", "routing_key"} in it. A quote can
-- only appear unescaped where JSON has structure, so these patterns cannot match inside a string value.
local function fields_fast(raw)
  local n = #raw
  -- the tag is near the very end: find it with a plain search, then match anchored (an unanchored pattern would be
  -- tried at every position); searched in place, as a copy of the tail would cost as much as the search
  local last = n - 300
  if last < 1 then last = 1 end
  local tag_at = string.find(raw, '"delivery_tag": "', last, true)
  if not tag_at then return nil end
  local tag = string.match(raw, '^"delivery_tag": "([^"\\\\]*)"}}$', tag_at)
  if not tag then return nil end
  local first = n - 2048
  if first < 1 then first = 1 end
  local at, from = nil, first
  while true do
    local found = string.find(raw, '"delivery_info": {"exchange": "', from, true)
    if not found then break end
    at, from = found, found + 1
  end
  if not at then return nil end
  local ex, rk = string.match(raw, '^"delivery_info": {"exchange": "([^"\\\\]*)", "routing_key": "([^"\\\\]*)"', at)
  if not ex then return nil end
  return tag, ex, rk
end

-- the same from a full decode, for envelopes written any other way; nil and a reason when it is not a message
local function fields_decoded(raw, q)
  local ok, env = pcall(cjson.decode, raw)
  if not ok or type(env) ~= 'table' then return nil, 'the envelope is not a JSON object' end
  local p = env['properties']
  if type(p) ~= 'table' then return nil, 'the envelope has no properties object' end
  local tag = p['delivery_tag']
  if type(tag) ~= 'string' then return nil, 'the envelope has no properties.delivery_tag string' end
  local ex, rk = '', q
  local di = p['delivery_info']
  if type(di) == 'table' then
    if type(di['exchange']) == 'string' then ex = di['exchange'] end
    if type(di['routing_key']) == 'string' then rk = di['routing_key'] end
  end
  return tag, ex, rk
end

-- exchange and routing key as the unacked record writes them: the same few for a whole batch, so escaped once
local quoted = {}
local function pystr_cached(v)
  local q = quoted[v]
  if not q then
    q = pystr(v)
    quoted[v] = q
  end
  return q
end

local function take(q, step, key, raw, given_token)
  local tag, ex, rk = fields_fast(raw)
  if not tag then
    tag, ex, rk = fields_decoded(raw, q)
    if not tag then return reject(q, key, ex, raw) end
  end
  local token = ''
  local echo = raw
  if not noack then
    if given_token and given_token ~= '' then
      token = given_token
      echo = ''
    else
      seq = seq + 1
      token = token_base .. '.' .. seq
    end
    -- written for the whole batch at the end (variadic ZADD/HSET), in this order, so a tag taken twice ends as the
    -- last take left it
    local w = #rec_unacked
    rec_index[w + 1], rec_index[w + 2] = now_sec, tag
    rec_unacked[w + 1], rec_unacked[w + 2] = tag, '[' .. raw .. ', ' .. pystr_cached(ex) .. ', ' .. pystr_cached(rk) .. ']'
    rec_leases[w + 1], rec_leases[w + 2] = now_ms + lease_ms, tag
    rec_holders[w + 1], rec_holders[w + 2] = tag, token .. '\\n' .. now_sec .. '\\n' .. q
  end
  claims[#claims + 1] = q
  claims[#claims + 1] = step
  claims[#claims + 1] = echo
  claims[#claims + 1] = token
  claims[#claims + 1] = tag
  taken = taken + 1
end

local function rotate(q)
  for qi = 1, #queues do
    if queues[qi] == q then
      table.remove(queues, qi)
      queues[#queues + 1] = q
      return
    end
  end
end

if npre == 1 then
  local q, step, raw = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  take(q, step, key_for(q, step), raw, ARGV[i + 4])
  rotate(q)
end

-- RPOP with a count (Redis 6.2+) takes a run from one list in one call; older servers refuse it, and then each
-- message is popped on its own
local pop_many = true
local function pop(key, n)
  if n > 1 and pop_many then
    local got = redis.pcall('RPOP', key, n)
    if type(got) ~= 'table' then return {} end
    if not got.err then return got end
    pop_many = false
  end
  local raw = redis.call('RPOP', key)
  if raw then return { raw } end
  return {}
end

local attempts = 0
if #queues == 1 then
  -- one queue: nothing to rotate, so each priority list is drained in runs
  local q = queues[1]
  for s = 1, #steps do
    local key = key_for(q, steps[s])
    while taken < max and attempts < max + 64 do
      local got = pop(key, max - taken)
      if #got == 0 then break end
      attempts = attempts + #got
      for g = 1, #got do take(q, steps[s], key, got[g]) end
    end
    if taken >= max then break end
  end
else
  local empty = {}
  while taken < max and attempts < max + 64 do
    attempts = attempts + 1
    local found = false
    for s = 1, #steps do
      for qi = 1, #queues do
        local q = queues[qi]
        local key = key_for(q, steps[s])
        if not empty[key] then
          local raw = redis.call('RPOP', key)
          if raw then
            take(q, steps[s], key, raw)
            table.remove(queues, qi)
            queues[#queues + 1] = q
            found = true
            break
          end
          empty[key] = true
        end
      end
      if found then break end
    end
    if not found then break end
  end
end
if #rec_unacked > 0 then
  pin(index)
  pin(leases)
  each_chunk('ZADD', index, rec_index)
  each_chunk('HSET', unacked, rec_unacked)
  each_chunk('ZADD', leases, rec_leases)
  each_chunk('HSET', holders, rec_holders)
end
return { claims, bad, acked }
`,
);

/**
 * Acks (or rejects without requeue): forgets each claim that is still ours.
 * KEYS: unacked, unacked_index, leases, holders, request key. ARGV: (tag, token) pairs.
 * Returns 1 (done) or 0 (stale) per pair.
 */
export const ACK = new LuaScript(
  'ack',
  PRELUDE +
    `
local prior = replayed(KEYS[5])
if prior then return prior end
return remember(KEYS[5], ack_many(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV))
`,
);

/**
 * Restore a claim that is still ours: RPUSH (head, consumed next) or LPUSH (tail), with the redelivered envelope.
 * KEYS: unacked, unacked_index, leases, holders, target list, request key. ARGV: tag, token, 'head'|'tail', envelope.
 * Returns 1, or 0 when stale.
 */
export const RESTORE = new LuaScript(
  'restore',
  PRELUDE +
    `
local prior = replayed(KEYS[6])
if prior then return prior end
local tag, token = ARGV[1], ARGV[2]
if not owned(KEYS[1], KEYS[2], KEYS[4], tag, token) then return remember(KEYS[6], 0) end
forget(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tag)
if ARGV[3] == 'head' then
  redis.call('RPUSH', KEYS[5], ARGV[4])
else
  redis.call('LPUSH', KEYS[5], ARGV[4])
end
return remember(KEYS[6], 1)
`,
);

/**
 * Moves a claimed message kq could not decode to the quarantine list (forgetting the claim if it is ours).
 * KEYS: unacked, unacked_index, leases, holders, quarantine, request key. ARGV: tag, token ('' for noAck), record.
 */
export const QUARANTINE = new LuaScript(
  'quarantine',
  PRELUDE +
    `
local prior = replayed(KEYS[6])
if prior then return prior end
local tag, token = ARGV[1], ARGV[2]
if token ~= '' then
  if not owned(KEYS[1], KEYS[2], KEYS[4], tag, token) then return remember(KEYS[6], 0) end
  forget(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tag)
end
redis.call('LPUSH', KEYS[5], ARGV[3])
return remember(KEYS[6], 1)
`,
);

/**
 * Lease heartbeat: extends the lease and refreshes the `unacked_index` score (so Kombu's visibility sweep never
 * sees a delivery kq is still working on as old) of every claim that is still ours.
 * KEYS: unacked, unacked_index, leases, holders. ARGV: leaseMs, then (tag, token) pairs. Returns the lost tokens.
 */
export const RENEW = new LuaScript(
  'renew',
  PRELUDE +
    `
local lease_ms = tonumber(ARGV[1])
local now_ms, now_sec = now()
local lost = {}
for a = 2, #ARGV, 2 do
  local tag, token = ARGV[a], ARGV[a + 1]
  if owned(KEYS[1], KEYS[2], KEYS[4], tag, token) then
    local _, _, queue = parse_holder(redis.call('HGET', KEYS[4], tag))
    redis.call('ZADD', KEYS[2], 'XX', now_sec, tag)
    redis.call('ZADD', KEYS[3], now_ms + lease_ms, tag)
    redis.call('HSET', KEYS[4], tag, token .. '\\n' .. now_sec .. '\\n' .. queue)
  else
    local tok = parse_holder(redis.call('HGET', KEYS[4], tag))
    if tok == token then
      redis.call('HDEL', KEYS[4], tag)
      redis.call('ZREM', KEYS[3], tag)
      unpin_if_alone(KEYS[3])
    end
    lost[#lost + 1] = token
  end
end
return lost
`,
);

/**
 * Finds kq leases that ran out. Records that no longer describe a live claim (a Python worker restored the message
 * after the visibility timeout) are dropped here.
 * KEYS: unacked, unacked_index, leases, holders. ARGV: limit. Returns {tag, holder, unacked value, ...}.
 */
export const LEASE_SCAN = new LuaScript(
  'lease-scan',
  PRELUDE +
    `
local now_ms = now()
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now_ms, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, tag in ipairs(expired) do
  local h = redis.call('HGET', KEYS[4], tag)
  local tok, score = parse_holder(h)
  local value = redis.call('HGET', KEYS[1], tag)
  if tok == nil or not value or not same_score(redis.call('ZSCORE', KEYS[2], tag), score) then
    redis.call('ZREM', KEYS[3], tag)
    unpin_if_alone(KEYS[3])
    if h then redis.call('HDEL', KEYS[4], tag) end
  else
    out[#out + 1] = tag
    out[#out + 1] = h
    out[#out + 1] = value
  end
end
return out
`,
);

/**
 * Restores claims whose lease ran out, each only if nothing changed since LEASE_SCAN read it (compare-and-set on
 * the holder record, the lease still expired and `unacked_index` untouched).
 * KEYS: unacked, unacked_index, leases, holders. ARGV: prefix, then (tag, holder, target key, envelope) groups.
 * Returns how many were restored.
 */
export const LEASE_RESTORE = new LuaScript(
  'lease-restore',
  PRELUDE +
    `
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
`,
);

/**
 * Kombu's visibility sweep, first half: takes `unacked_mutex` (SET NX PX, as Kombu) and lists deliveries older
 * than the visibility timeout that kq does not hold (kq-held ones follow the lease rule instead).
 * KEYS: unacked, unacked_index, holders, unacked_mutex. ARGV: mutex token, mutex expiry ms, visibility s, limit.
 * Returns false when the mutex is held elsewhere, else {tag, score, unacked value or false, ...}.
 */
export const VISIBILITY_SCAN = new LuaScript(
  'visibility-scan',
  PRELUDE +
    `
if not redis.call('SET', KEYS[4], ARGV[1], 'PX', tonumber(ARGV[2]), 'NX') then return false end
local _, _, now_s = now()
local ceil = now_s - tonumber(ARGV[3])
local old = redis.call('ZREVRANGEBYSCORE', KEYS[2], string.format('%.6f', ceil), 0, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for a = 1, #old, 2 do
  local tag = old[a]
  if redis.call('HEXISTS', KEYS[3], tag) == 0 then
    out[#out + 1] = tag
    out[#out + 1] = old[a + 1]
    out[#out + 1] = redis.call('HGET', KEYS[1], tag)
  end
end
return out
`,
);

/**
 * Kombu's visibility sweep, second half: restores each listed delivery if its `unacked_index` score is unchanged
 * and kq does not hold it, then releases the mutex (compare-and-delete, as Kombu's release script).
 * KEYS: unacked, unacked_index, holders, unacked_mutex.
 * ARGV: prefix, mutex token, then (tag, score, envelope, nTargets, (op, key)...) groups; op is RPUSH or LPUSH.
 */
export const VISIBILITY_RESTORE = new LuaScript(
  'visibility-restore',
  PRELUDE +
    `
local prefix = ARGV[1]
local restored = 0
local a = 3
while a <= #ARGV do
  local tag, score, envelope, n = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  if redis.call('ZSCORE', KEYS[2], tag) == score and redis.call('HEXISTS', KEYS[3], tag) == 0 then
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
if redis.call('GET', KEYS[4]) == ARGV[2] then redis.call('DEL', KEYS[4]) end
return restored
`,
);

/** Releases `unacked_mutex` if it is still ours (Kombu's script, verbatim). KEYS: mutex. ARGV: token. */
export const MUTEX_RELEASE = new LuaScript(
  'mutex-release',
  `
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        redis.call('del', KEYS[1])
        return 1
    `,
);

/**
 * Holds a message in the delayed set until due (server time + delay) and, when it is now the earliest, tells every
 * kq process's promoter so it re-arms its timer. Member: "<byte length of key>:<key><envelope>".
 * KEYS: delayed. ARGV: delay ms, member, nudge channel. Returns the due time (epoch ms).
 */
export const PUSH_DELAYED = new LuaScript(
  'push-delayed',
  PRELUDE +
    `
local now_ms = now()
local due = now_ms + tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], due, ARGV[2])
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if first[1] == ARGV[2] then redis.call('PUBLISH', ARGV[3], tostring(due)) end
return due
`,
);

/**
 * Moves due delayed messages to the tail of their queue lists (LPUSH, as a publish).
 * KEYS: delayed. ARGV: prefix, limit. Returns {moved, ms until the next one is due or -1}.
 */
export const PROMOTE_DELAYED = new LuaScript(
  'promote-delayed',
  PRELUDE +
    `
local now_ms = now()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms, 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do
  local colon = string.find(m, ':', 1, true)
  local n = tonumber(string.sub(m, 1, colon - 1))
  redis.call('LPUSH', ARGV[1] .. string.sub(m, colon + 1, colon + n), string.sub(m, colon + n + 1))
  redis.call('ZREM', KEYS[1], m)
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = -1
if nxt[2] then wait = math.max(0, tonumber(nxt[2]) - now_ms) end
return { #due, wait }
`,
);

/**
 * Deletes or purges a queue: sums LLEN of its lists and deletes them, atomically (Kombu does the same in a MULTI).
 * KEYS: the queue's lists. Returns the number of messages they held.
 */
export const DRAIN_LISTS = new LuaScript(
  'drain-lists',
  `
local total = 0
for _, key in ipairs(KEYS) do
  total = total + redis.call('LLEN', key)
  redis.call('DEL', key)
end
return total
`,
);
