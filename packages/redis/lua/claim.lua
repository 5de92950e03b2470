local unacked, index, quarantine = KEYS[1], KEYS[2], KEYS[3]
local prefix, sep = ARGV[1], ARGV[2]
local max = tonumber(ARGV[3])
local noack = ARGV[4] == '1'
local lease_us, vt_us = tonumber(ARGV[5]), tonumber(ARGV[6])
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
  local settles = {}
  for k = 1, 2 * nacks do settles[k] = ARGV[a + k] end
  acked = settle_many(unacked, index, settles)
end

local now_ms, now_us = now()
-- one lease for the whole batch: one score, written for every claim and sent back once
local score = ''
if not noack then score = lease_score(lease_us, vt_us, now_us) end
local claims, bad = {}, {}
local taken = 0
local rec_index, rec_unacked = {}, {}

local ESC = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
-- a JSON string as Python writes it (ASCII escapes; UTF-8 bytes are left as they are)
local function pystr(s)
  return '"' .. (string.gsub(s, '[%c"\\]', function(c) return ESC[c] or string.format('\\u%04x', string.byte(c)) end)) .. '"'
end

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
local WINDOWS = { 256, 1024 }
local function fields_fast(raw)
  local n = #raw
  -- the tag is near the very end: find it with a plain search, then match anchored (an unanchored pattern would be
  -- tried at every position); searched in place, as a copy of the tail would cost as much as the search. A plain
  -- search stops at every quote to compare, so it starts where a UUID tag would be, and further back only if needed.
  local tag_at = string.find(raw, '"delivery_tag": "', math.max(1, n - 80), true)
    or string.find(raw, '"delivery_tag": "', math.max(1, n - 300), true)
  if not tag_at then return nil end
  local tag = string.match(raw, '^"delivery_tag": "([^"\\]*)"}}$', tag_at)
  if not tag then return nil end
  -- delivery_info comes a few members before the tag (priority and body_encoding between them): its last occurrence
  -- in the 256 bytes before the tag (short names), else in the 1 KiB before it
  local at
  for _, back in ipairs(WINDOWS) do
    local from = tag_at - back
    if from < 1 then from = 1 end
    while true do
      local found = string.find(raw, '"delivery_info": {"exchange": "', from, true)
      if not found or found > tag_at then break end
      at, from = found, found + 1
    end
    if at or from == 1 then break end
  end
  if not at then return nil end
  local ex, rk = string.match(raw, '^"delivery_info": {"exchange": "([^"\\]*)", "routing_key": "([^"\\]*)"', at)
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

local function take(q, step, key, raw, handed_out)
  local tag, ex, rk = fields_fast(raw)
  if not tag then
    tag, ex, rk = fields_decoded(raw, q)
    if not tag then return reject(q, key, ex, raw) end
  end
  -- the caller has a message it handed out already: its raw is not sent back
  local echo = raw
  if handed_out then echo = '' end
  if not noack then
    -- written for the whole batch at the end (variadic ZADD/HSET), in this order, so a tag taken twice ends as the
    -- last take left it
    local w = #rec_unacked
    rec_index[w + 1], rec_index[w + 2] = score, tag
    rec_unacked[w + 1], rec_unacked[w + 2] = tag, '[' .. raw .. ', ' .. pystr_cached(ex) .. ', ' .. pystr_cached(rk) .. ']'
  end
  claims[#claims + 1] = q
  claims[#claims + 1] = step
  claims[#claims + 1] = echo
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
  take(q, step, key_for(q, step), raw, ARGV[i + 4] == '1')
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

-- one queue's lists in priority order with LMPOP (Redis 7.0+): a run from the first list that has messages, in one
-- call, and one call (not one per priority step) to find all of them empty; false when the server has no LMPOP
local function drain_with_lmpop(q)
  local args, step_of = { #steps }, {}
  for s = 1, #steps do
    local key = key_for(q, steps[s])
    args[s + 1] = key
    step_of[key] = steps[s]
  end
  local count_at = #args + 3
  args[#args + 1], args[#args + 2] = 'RIGHT', 'COUNT'
  local guard = 0
  while taken < max and guard < max + 64 do
    args[count_at] = max - taken
    local got = redis.pcall('LMPOP', unpack(args))
    if type(got) ~= 'table' then return true end
    if got.err then return false end
    local key, items = got[1], got[2]
    guard = guard + #items
    for g = 1, #items do take(q, step_of[key], key, items[g]) end
  end
  return true
end

local attempts = 0
if #queues == 1 and drain_with_lmpop(queues[1]) then
  -- done
elseif #queues == 1 then
  -- one queue on a server without LMPOP: each priority list is drained in runs
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
  pin_for(index, #rec_index / 2)
  each_chunk('ZADD', index, rec_index)
  each_chunk('HSET', unacked, rec_unacked)
end
return { claims, bad, acked, score }
