-- Rebuild the floor indexes of some cards from their session hashes, idempotently: for
-- data written before the indexes existed, or to repair them (`bonusd floor reindex`).
-- KEYS[1]  the site's floor-row hash (routes the call to the site's shard)
-- ARGV     base, day (the gaming day of a session that does not name one), cards...
-- A card with a session gets its floor-place and floor-row (the spend of the session's
-- day from dayspend:{day}, or else from the day totals, which then fill dayspend in);
-- a card without one loses both. Returns how many cards have a floor-row now.
local base, default_day = ARGV[1], ARGV[2]
local n = 0
local changed = {}
for i = 3, #ARGV do
  local card = ARGV[i]
  changed[card] = true
  local skey = base .. 'session:' .. card
  local v = redis.call('HMGET', skey, 'slot', 'kind', 'area', 'device', 'seat', 'last_play', 'day')
  if not v[1] then
    redis.call('HDEL', base .. 'floor-row', card)
    redis.call('HDEL', base .. 'floor-place', card)
  else
    local device = v[4] or string.match(v[1], '^([^#]+)') or v[1]
    local seat = v[5] or string.match(v[1], '#(%d+)$') or ''
    local bank = redis.call('HGET', base .. 'device:' .. device, 'bank') or ''
    local place = table.concat({v[2] or '', v[3] or '', device, seat, bank}, '\t')
    redis.call('HSET', base .. 'floor-place', card, place)
    local day = v[7]
    if not day or day == '' then
      day = default_day
      redis.call('HSET', skey, 'day', day)
    end
    local spend = redis.call('HGET', base .. 'dayspend:' .. day, card)
    if not spend then
      spend = redis.call('HGET', base .. 'day:' .. day .. ':' .. card, 'spend_cents')
      if spend then redis.call('HSET', base .. 'dayspend:' .. day, card, spend) end
    end
    local tier, excluded = '', '0'
    local m = redis.call('HGET', base .. 'member-index', card)
    if m then
      tier, excluded = string.match(m, '^([^|]*)|[^|]*|([^|]*)')
      tier, excluded = tier or '', excluded == '1' and '1' or '0'
    end
    local last = string.format('%d', tonumber(v[6]) or 0)
    redis.call('HSET', base .. 'floor-row', card,
      table.concat({card, place, last, spend or '0', tier, excluded, day}, '\t'))
    n = n + 1
  end
end
log_floor_rows(base, changed)
return n
