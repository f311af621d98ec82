-- End sessions idle since before a cutoff (a lost card_out), atomically.
-- KEYS[1]  the site's lastseen zset;  ARGV: base, cutoff_ms, limit
-- Returns  the cards whose sessions were ended.
local base, cutoff, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local cards = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. cutoff, 'LIMIT', 0, limit)
local ended = {}
local changed = {}
-- remembered like a card-out (apply.lua): a late event older than the session's last
-- cannot place the card again, nor take the place
local function remember(key, member, ts)
  local cur = tonumber(redis.call('ZSCORE', key, member))
  if not cur or ts > cur then redis.call('ZADD', key, ts, member) end
end
for _, card in ipairs(cards) do
  local skey = base .. 'session:' .. card
  local v = redis.call('HMGET', skey, 'slot', 'kind', 'area', 'last_seen')
  if v[1] and tonumber(v[4]) < cutoff then
    remember(base .. 'floor-ended-card', card, tonumber(v[4]))
    remember(base .. 'floor-ended-slot', v[1], tonumber(v[4]))
    redis.call('ZREM', base .. 'active:' .. v[2] .. ':' .. v[3], card)
    local at = base .. 'at:' .. v[1]
    if redis.call('GET', at) == card then redis.call('DEL', at) end
    redis.call('DEL', skey)
    redis.call('HDEL', base .. 'floor-place', card)
    redis.call('HDEL', base .. 'floor-row', card)
    ended[#ended + 1] = card
    changed[card] = true
    redis.call('ZREM', KEYS[1], card)
  elseif not v[1] then
    redis.call('ZREM', KEYS[1], card)
  end
end
log_floor_rows(base, changed)
if #ended > 0 then redis.call('HINCRBY', base .. 'stats', 'idle_sessions_ended', #ended) end
return ended
