-- Apply one batch of telemetry events and dead letters to a site's floor, atomically.
-- KEYS[1]  the site's stats hash (routes the call to the site's shard)
-- ARGV     base, dedup_ttl_s, deadletter_maxlen, events_json, dead_json
--          events_json: [[id, bucket, card, [tokens...]], ...]   (see bonusd/floor.py)
--          dead_json:   [[reason, topic, payload, detail, arrived_ms], ...]
-- (Two JSON arguments instead of thousands of small ones: packing many arguments costs
-- the client far more than cjson.decode costs the server.)
-- Returns  a string with one character per event: "1" applied, "0" duplicate.
local base = ARGV[1]
local ttl = tonumber(ARGV[2])
local maxlen = ARGV[3]
local events = cjson.decode(ARGV[4])
local deadletters = cjson.decode(ARGV[5])
local status = {}
local applied, dups = 0, 0
local expired = {}

local function end_session(card, sess)
  -- sess: {device=..., kind=..., area=...}; removes every index of the session
  redis.call('ZREM', base .. 'active:' .. sess.kind .. ':' .. sess.area, card)
  redis.call('ZREM', base .. 'lastseen', card)
  local at = base .. 'at:' .. sess.slot
  if redis.call('GET', at) == card then redis.call('DEL', at) end
  redis.call('DEL', base .. 'session:' .. card)
end

local function load_session(card)
  local v = redis.call('HMGET', base .. 'session:' .. card, 'slot', 'kind', 'area', 'last_seen')
  if not v[1] then return nil end
  return {slot = v[1], kind = v[2], area = v[3], last_seen = tonumber(v[4])}
end

local function resolve_area(slot, given)
  local device = string.match(slot, '^([^#]+)')
  local area = redis.call('HGET', base .. 'device:' .. device, 'area')
  if area then return area end
  if given ~= '' then return given end
  return 'unknown'
end

local function start_session(card, kind, slot, area, ts)
  local sess = load_session(card)
  if sess then
    if ts < sess.last_seen then return false end  -- stale: a newer event placed the card
    end_session(card, sess)
  end
  local other = redis.call('GET', base .. 'at:' .. slot)
  if other and other ~= card then
    local osess = load_session(other)
    if osess and osess.slot == slot then end_session(other, osess) end
  end
  area = resolve_area(slot, area)
  local device = string.match(slot, '^([^#]+)')
  local seat = string.match(slot, '#(%d+)$') or ''
  redis.call('HSET', base .. 'session:' .. card, 'slot', slot, 'device', device, 'seat', seat,
    'kind', kind, 'area', area, 'since', ts, 'last_play', 0, 'last_seen', ts)
  redis.call('ZADD', base .. 'active:' .. kind .. ':' .. area, ts, card)
  redis.call('SADD', base .. 'active-index', 'active:' .. kind .. ':' .. area)
  redis.call('SET', base .. 'at:' .. slot, card)
  redis.call('ZADD', base .. 'lastseen', ts, card)
  return true
end

for _, ev in ipairs(events) do
  local id, bucket, card, t = ev[1], ev[2], ev[3], ev[4]
  local seen = base .. 'seen:' .. bucket
  if redis.call('SADD', seen, id) == 0 then
    dups = dups + 1
    status[#status + 1] = '0'
  else
    if not expired[seen] then
      redis.call('EXPIRE', seen, ttl)
      expired[seen] = true
    end
    applied = applied + 1
    status[#status + 1] = '1'
    if redis.call('SISMEMBER', base .. 'members', card) == 0 then
      redis.call('SADD', base .. 'unregistered', card)
    end
    local i, stop = 1, #t
    while i <= stop do
      local op = t[i]
      if op == 'H' then
        redis.call('HINCRBY', base .. t[i + 1], t[i + 2], t[i + 3])
        i = i + 4
      elseif op == 'HS' then
        redis.call('HSET', base .. t[i + 1], t[i + 2], t[i + 3])
        i = i + 4
      elseif op == 'Z' then
        redis.call('ZINCRBY', base .. t[i + 1], t[i + 3], t[i + 2])
        i = i + 4
      elseif op == 'HMAX' then
        local cur = tonumber(redis.call('HGET', base .. t[i + 1], t[i + 2]))
        if not cur or tonumber(t[i + 3]) > cur then
          redis.call('HSET', base .. t[i + 1], t[i + 2], t[i + 3])
        end
        i = i + 4
      elseif op == 'S' then
        redis.call('SADD', base .. t[i + 1], t[i + 2])
        i = i + 3
      elseif op == 'IN' then
        start_session(card, t[i + 1], t[i + 2], t[i + 3], tonumber(t[i + 4]))
        i = i + 5
      elseif op == 'P' then
        local kind, slot, area, ts = t[i + 1], t[i + 2], t[i + 3], tonumber(t[i + 4])
        local sess = load_session(card)
        local here = sess and sess.slot == slot
        if not here then here = start_session(card, kind, slot, area, ts) end
        if here then
          local skey = base .. 'session:' .. card
          local lp = tonumber(redis.call('HGET', skey, 'last_play')) or 0
          if ts > lp then redis.call('HSET', skey, 'last_play', ts) end
          local ls = tonumber(redis.call('HGET', skey, 'last_seen')) or 0
          if ts > ls then
            redis.call('HSET', skey, 'last_seen', ts)
            redis.call('ZADD', base .. 'lastseen', ts, card)
          end
        end
        i = i + 5
      elseif op == 'OUT' then
        local slot, ts = t[i + 1], tonumber(t[i + 2])
        local sess = load_session(card)
        if sess and sess.slot == slot and ts >= sess.last_seen then end_session(card, sess) end
        i = i + 3
      else
        return redis.error_reply('bonusd apply.lua: unknown operation ' .. tostring(op))
      end
    end
  end
end

for _, d in ipairs(deadletters) do
  redis.call('XADD', base .. 'deadletters', 'MAXLEN', '~', maxlen, '*',
    'reason', d[1], 'topic', d[2], 'payload', d[3], 'detail', d[4], 'arrived_ms', d[5])
  redis.call('HINCRBY', KEYS[1], 'deadletter:' .. d[1], 1)
end
if applied > 0 then redis.call('HINCRBY', KEYS[1], 'applied', applied) end
if dups > 0 then redis.call('HINCRBY', KEYS[1], 'duplicates', dups) end
return table.concat(status)
