-- Apply one batch of telemetry to a site's floor, atomically and exactly once.
-- KEYS[1]  the site's stats hash (routes the call to the site's shard)
-- ARGV     base, dedup_ttl_s, deadletter_maxlen, marks_json, effects_json, dead_json,
--          duplicates (how many of the batch's messages the caller already dropped)
--          marks_json:   each event's identity, in the batch's order: [event id, dedup
--                        hour bucket] (contract v1) or [device, epoch, seq, ts_ms] (v2)
--          effects_json: the merged effects of those events (bonusd/floor/effects.py)
--          dead_json:    [[reason, topic, payload, detail, arrived_ms], ...]
-- Returns  {"skip", n, verdict, ...}  nothing written: the n-th event (from 1) is a
--                            duplicate ("dup"), or a v2 event more than the window behind
--                            its epoch ("behind") or of an old epoch ("old_epoch"); the
--                            caller drops them (the last two as dead letters) and calls again
--          {"ok", n, gaps}   all n events and the dead letters were applied; `gaps` v2
--                            sequence numbers were found lost (lua/seqstate.lua)
-- The effects are merged per batch by the caller, so they are valid only if every event
-- in the batch is new: hence the check first, and no write at all when it fails.
local base = ARGV[1]
local ttl = tonumber(ARGV[2])
local maxlen = ARGV[3]
local marks = cjson.decode(ARGV[4])
local fx = cjson.decode(ARGV[5])
local dead = cjson.decode(ARGV[6])
local duplicates = tonumber(ARGV[7])

-- v1 ids against their hour's set; v2 events against their device's state, read once
-- and judged event by event in batch order (seqstate.lua)
local devseq = base .. 'devseq'
local states, gaps, skips = seq_load(devseq, marks), 0, {}
for n, e in ipairs(marks) do
  local verdict, lost = 'new', 0
  if e[3] then
    verdict, lost = seq_judge(states[e[1]], e[2], e[3], e[4])
  elseif redis.call('SISMEMBER', base .. 'seen:' .. e[2], e[1]) == 1 then
    verdict = 'dup'
  end
  if verdict == 'new' then
    gaps = gaps + lost
  else
    skips[#skips + 1] = n
    skips[#skips + 1] = verdict
  end
end
if #skips > 0 then
  table.insert(skips, 1, 'skip')
  return skips
end

local expired = {}
for _, e in ipairs(marks) do
  if not e[3] then
    local seen = base .. 'seen:' .. e[2]
    redis.call('SADD', seen, e[1])
    if not expired[seen] then
      redis.call('EXPIRE', seen, ttl)
      expired[seen] = true
    end
  end
end
seq_save(devseq, states)
for _, card in ipairs(fx.CARDS) do
  if redis.call('SISMEMBER', base .. 'members', card) == 0 then
    redis.call('SADD', base .. 'unregistered', card)
  end
end

-- sessions, in event order, with each player's session cached for the batch
local sess = {}   -- card -> session table, or false when known to have none
local dirty = {}  -- card -> true when a cached session's times or day changed
local rows = {}   -- card -> true when its floor-row must be written again (at the end)
local changed = {}  -- card -> true when its floor-row was written or removed (the log)

local function load_session(card)
  local s = sess[card]
  if s ~= nil then return s or nil end
  local v = redis.call('HMGET', base .. 'session:' .. card,
    'slot', 'kind', 'area', 'last_seen', 'last_play', 'day')
  if not v[1] then sess[card] = false; return nil end
  s = {slot = v[1], kind = v[2], area = v[3],
       last_seen = tonumber(v[4]) or 0, last_play = tonumber(v[5]) or 0, day = v[6] or ''}
  sess[card] = s
  return s
end

-- the card's gaming day moves forward only (ISO dates compare as strings)
local function newer_day(card, s, day)
  if day and day > s.day then s.day = day; dirty[card] = true; rows[card] = true end
end

-- The end of a session is remembered for its card and for its place (EGM or table seat):
-- the newest event it had seen (ms). An event older than that cannot place the card again
-- nor take the place from a newer holder, in whatever order messages arrive (docs/
-- telemetry.md, "Time"). Entries older than the de-duplication window are pruned below.
local ended_card, ended_slot = base .. 'floor-ended-card', base .. 'floor-ended-slot'

local function remember(key, member, ts)
  local cur = tonumber(redis.call('ZSCORE', key, member))
  if not cur or ts > cur then redis.call('ZADD', key, ts, member) end
end

local function ended_after(key, member, ts)
  local cur = tonumber(redis.call('ZSCORE', key, member))
  return cur ~= nil and ts < cur
end

local function end_session(card, s, ts)
  local newest = math.max(s.last_seen, ts or 0)
  remember(ended_card, card, newest)
  remember(ended_slot, s.slot, newest)
  redis.call('ZREM', base .. 'active:' .. s.kind .. ':' .. s.area, card)
  redis.call('ZREM', base .. 'lastseen', card)
  redis.call('HDEL', base .. 'floor-place', card)
  redis.call('HDEL', base .. 'floor-row', card)
  changed[card] = true
  local at = base .. 'at:' .. s.slot
  if redis.call('GET', at) == card then redis.call('DEL', at) end
  redis.call('DEL', base .. 'session:' .. card)
  sess[card] = false
  dirty[card] = nil
  rows[card] = nil
end

local function resolve_area(slot, given)
  local device = string.match(slot, '^([^#]+)')
  local area = redis.call('HGET', base .. 'device:' .. device, 'area')
  if area then return area end
  if given ~= '' then return given end
  return 'unknown'
end

local function start_session(card, kind, slot, area, ts, day)
  local s = load_session(card)
  -- stale: a newer event placed the card, or ended its session, or a newer session here
  if s and ts < s.last_seen then return false end
  if ended_after(ended_card, card, ts) then return false end
  if ended_after(ended_slot, slot, ts) then return false end
  local other = redis.call('GET', base .. 'at:' .. slot)
  local o = nil
  if other and other ~= card then
    o = load_session(other)
    if o and o.slot ~= slot then o = nil end
    if o and ts < o.last_seen then return false end  -- stale: a newer card holds the place
  end
  if s then end_session(card, s) end
  if o then end_session(other, o) end
  area = resolve_area(slot, area)
  local device = string.match(slot, '^([^#]+)')
  local seat = string.match(slot, '#(%d+)$') or ''
  day = day or ''
  redis.call('HSET', base .. 'session:' .. card, 'slot', slot, 'device', device, 'seat', seat,
    'kind', kind, 'area', area, 'since', ts, 'last_play', 0, 'last_seen', ts, 'day', day)
  redis.call('ZADD', base .. 'active:' .. kind .. ':' .. area, ts, card)
  redis.call('SADD', base .. 'active-index', 'active:' .. kind .. ':' .. area)
  redis.call('SET', base .. 'at:' .. slot, card)
  redis.call('ZADD', base .. 'lastseen', ts, card)
  local bank = redis.call('HGET', base .. 'device:' .. device, 'bank') or ''
  local place = table.concat({kind, area, device, seat, bank}, '\t')
  redis.call('HSET', base .. 'floor-place', card, place)
  sess[card] = {slot = slot, kind = kind, area = area, last_seen = ts, last_play = 0,
                day = day, place = place}
  rows[card] = true
  return true
end

local newest = 0  -- the newest event time of the batch, for pruning the ended sessions
for _, t in ipairs(fx.SESS) do
  local card, op = t[1], t[2]
  local at_ms = tonumber(op == 'OUT' and t[4] or t[6]) or 0
  if at_ms > newest then newest = at_ms end
  if op == 'IN' then
    start_session(card, t[3], t[4], t[5], tonumber(t[6]), t[7])
  elseif op == 'P' then
    local kind, slot, area, ts = t[3], t[4], t[5], tonumber(t[6])
    local s = load_session(card)
    local here = s and s.slot == slot
    if not here then here = start_session(card, kind, slot, area, ts, t[7]) end
    if here then
      s = sess[card]
      if ts > s.last_play then s.last_play = ts; dirty[card] = true; rows[card] = true end
      if ts > s.last_seen then s.last_seen = ts; dirty[card] = true end
      newer_day(card, s, t[7])
    end
  elseif op == 'OUT' then
    local slot, ts = t[3], tonumber(t[4])
    local s = load_session(card)
    if s and s.slot == slot and ts >= s.last_seen then
      end_session(card, s, ts)
    elseif not s or ts >= s.last_seen then
      -- the card-in there not seen yet (or lost): an older event cannot place the card
      remember(ended_card, card, ts)
      remember(ended_slot, slot, ts)
    end
  else
    return redis.error_reply('bonusd apply.lua: unknown session move ' .. tostring(op))
  end
end
if newest > 0 then  -- no accepted event is older than the window: nothing to compare with
  local horizon = '(' .. string.format('%d', newest - ttl * 1000)
  redis.call('ZREMRANGEBYSCORE', ended_card, '-inf', horizon)
  redis.call('ZREMRANGEBYSCORE', ended_slot, '-inf', horizon)
end
-- the merged, order-free effects
for _, e in ipairs(fx.H) do
  redis.call('HINCRBY', base .. e[1], e[2], e[3])
  -- a day's spend changed: the active card's floor-row carries its newest day's spend
  if string.sub(e[1], 1, 9) == 'dayspend:' then
    local s = load_session(e[2])
    if s then
      local day = string.sub(e[1], 10)
      if day >= s.day then rows[e[2]] = true end
      newer_day(e[2], s, day)
    end
  end
end
for _, e in ipairs(fx.HS) do redis.call('HSET', base .. e[1], e[2], e[3]) end
for _, e in ipairs(fx.HMAX) do
  local cur = tonumber(redis.call('HGET', base .. e[1], e[2]))
  if not cur or e[3] > cur then
    redis.call('HSET', base .. e[1], e[2], string.format('%d', e[3]))
  end
end
for _, e in ipairs(fx.Z) do redis.call('ZINCRBY', base .. e[1], e[3], e[2]) end
for _, e in ipairs(fx.S) do redis.call('SADD', base .. e[1], e[2]) end
for _, e in ipairs(fx.SH) do
  if redis.call('SADD', base .. e[1], e[2]) == 1 then
    redis.call('HINCRBY', base .. e[3], e[4], 1)
  end
end

for card in pairs(dirty) do
  local s = sess[card]
  redis.call('HSET', base .. 'session:' .. card, 'last_play', string.format('%d', s.last_play),
    'last_seen', string.format('%d', s.last_seen), 'day', s.day)
  redis.call('ZADD', base .. 'lastseen', s.last_seen, card)
end

-- The floor-row of each active card whose place, last play, day, or day spend changed:
-- card TAB kind TAB area TAB device TAB seat TAB bank TAB last_play_ms TAB spend_cents
-- TAB tier TAB excluded TAB day -- a RAPS floor snapshot's line (rapsfloor.py) for `day`,
-- then `day`; the member's tier and exclusion are refreshed by the import (member_rows.lua).
for card in pairs(rows) do
  local s = sess[card]
  local tier, excluded = '', '0'
  local m = redis.call('HGET', base .. 'member-index', card)
  if m then
    tier, excluded = string.match(m, '^([^|]*)|[^|]*|([^|]*)')
    tier, excluded = tier or '', excluded == '1' and '1' or '0'
  end
  local spend = s.day ~= '' and redis.call('HGET', base .. 'dayspend:' .. s.day, card) or '0'
  local place = s.place or redis.call('HGET', base .. 'floor-place', card)
  if not place then  -- a session from before the floor indexes: rebuild its place
    local v = redis.call('HMGET', base .. 'session:' .. card, 'device', 'seat')
    local bank = redis.call('HGET', base .. 'device:' .. (v[1] or ''), 'bank') or ''
    place = table.concat({s.kind, s.area, v[1] or '', v[2] or '', bank}, '\t')
    redis.call('HSET', base .. 'floor-place', card, place)
  end
  redis.call('HSET', base .. 'floor-row', card, table.concat({card, place,
    string.format('%d', s.last_play), spend, tier, excluded, s.day}, '\t'))
  changed[card] = true
end
log_floor_rows(base, changed)

for _, d in ipairs(dead) do
  redis.call('XADD', base .. 'deadletters', 'MAXLEN', '~', maxlen, '*',
    'reason', d[1], 'topic', d[2], 'payload', d[3], 'detail', d[4], 'arrived_ms', d[5])
  redis.call('HINCRBY', KEYS[1], 'deadletter:' .. d[1], 1)
end
local applied = #marks
if applied > 0 then redis.call('HINCRBY', KEYS[1], 'applied', applied) end
if duplicates > 0 then redis.call('HINCRBY', KEYS[1], 'duplicates', duplicates) end
if gaps > 0 then redis.call('HINCRBY', KEYS[1], 'sequence_gaps', gaps) end
return {'ok', applied, gaps}
