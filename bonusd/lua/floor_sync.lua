-- Bring a daemon's mirror of floor-row up to date (floormirror.py), atomically.
-- KEYS[1]  the site's floor-row hash
-- ARGV     base, the floor-row-seq the mirror holds ('' when it holds nothing)
-- Returns  {'full', seq, size, {card, row, card, row, ...}}  when the mirror must be
--          rebuilt: it holds nothing, is older than the log keeps, or is newer than
--          Redis (emptied or restored since);
--          {'delta', seq, size, {card, ...}, {row or nil, ...}}  the rows changed since
--          (nil: the card left the floor).  size: how many rows floor-row holds.
local base = ARGV[1]
local seq = tonumber(redis.call('GET', base .. 'floor-row-seq') or '0')
local low = tonumber(redis.call('GET', base .. 'floor-row-low') or '0')
local have = tonumber(ARGV[2])
local size = redis.call('HLEN', KEYS[1])
if not have or have < low or have > seq then
  return {'full', seq, size, redis.call('HGETALL', KEYS[1])}
end
local cards = redis.call('ZRANGEBYSCORE', base .. 'floor-row-log', '(' .. string.format('%d', have), '+inf')
local rows = {}
for i = 1, #cards, 1000 do
  local got = redis.call('HMGET', KEYS[1], unpack(cards, i, math.min(i + 999, #cards)))
  for j = 1, #got do rows[#rows + 1] = got[j] end
end
return {'delta', seq, size, cards, rows}
