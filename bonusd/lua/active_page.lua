-- bonusd active_page.lua: one page of who is active now, in card order, in one reply.
-- KEYS[1]: the site's active-index (only routes the script to the site's shard).
-- ARGV: base, cursor (the last card of the previous page; '' = from the start),
--       limit (0 = every card), then the active sets to read, relative to base
--       (`active:{kind}:{area}`). Read-only.
-- Reply: the next cursor ('' when this page is the last), then per card: card, kind,
--        device, seat, area, since, last_play, last_seen (nil where the session is gone).
local base, cursor, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local cards = {}
for i = 4, #ARGV do
  for _, card in ipairs(redis.call('ZRANGE', base .. ARGV[i], 0, -1)) do
    if card > cursor then cards[#cards + 1] = card end
  end
end
table.sort(cards)
local n = #cards
if limit > 0 and n > limit then n = limit end
local out = {n < #cards and cards[n] or ''}
for i = 1, n do
  local card = cards[i]
  local v = redis.call('HMGET', base .. 'session:' .. card,
    'kind', 'device', 'seat', 'area', 'since', 'last_play', 'last_seen')
  out[#out + 1] = card
  for j = 1, 7 do out[#out + 1] = v[j] or false end
end
return out
