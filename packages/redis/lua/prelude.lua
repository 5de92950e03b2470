local function now()
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  return ms, t[1] .. '.' .. string.format('%06d', tonumber(t[2])), tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- holder record: token, score snapshot, queue
local function parse_holder(h)
  if not h then return nil end
  local a = string.find(h, '\n', 1, true)
  if not a then return nil end
  local b = string.find(h, '\n', a + 1, true)
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
  redis.call('ZADD', key, 'NX', 'inf', '_kq.pin: keeps this sorted set a skiplist, as a listpack would make every insert scan the set')
end

local function unpin_if_alone(key)
  if redis.call('ZCARD', key) == 1 and redis.call('ZSCORE', key, '_kq.pin: keeps this sorted set a skiplist, as a listpack would make every insert scan the set') then redis.call('DEL', key) end
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

local ESC = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
-- a JSON string as Python writes it (ASCII escapes; UTF-8 bytes are left as they are)
local function pystr(s)
  return '"' .. (string.gsub(s, '[%c"\\]', function(c) return ESC[c] or string.format('\\u%04x', string.byte(c)) end)) .. '"'
end

