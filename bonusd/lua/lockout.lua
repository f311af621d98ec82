-- One try against a lockout (bonusd/access/lockout.py), judged and counted in one atomic
-- step, so that tries arriving together are counted one by one and exactly `attempts` of
-- them are counted before the lock. Time is the daemon's clock (ARGV[1]), not Redis TIME.
--
-- KEYS[1]  the lockout hash: n (tries counted), first (ms of the first one), until (ms the
--          lock ends, absent while unlocked)
-- ARGV[1]  now, ms of the daemon's clock
-- ARGV[2]  attempts: the try that brings the count to it locks
-- ARGV[3]  lock_ms: how long the lock holds, from the locking try
-- ARGV[4]  window_ms: a count is forgotten this long after its first try
-- ARGV[5]  keep_s: Redis expiry of the hash (housekeeping only: the clock judges)
--
-- Returns {counted, n, until}: counted 0 when the lock already held (nothing counted);
-- n the count after this try; until the lock's end in ms, 0 when unlocked.
local now = tonumber(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'n', 'first', 'until')
local n = tonumber(state[1] or '0')
local first = tonumber(state[2] or '0')
local till = tonumber(state[3] or '0')
if till > now then
  return {0, n, till}
end
if till > 0 or (n > 0 and now - first >= tonumber(ARGV[4])) then
  -- the lock has lifted, or the earlier tries are too old to count: start afresh
  redis.call('DEL', KEYS[1])
  n = 0
end
n = redis.call('HINCRBY', KEYS[1], 'n', 1)
if n == 1 then
  redis.call('HSET', KEYS[1], 'first', now)
end
till = 0
if n >= tonumber(ARGV[2]) then
  till = now + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'until', till)
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[5]))
return {1, n, till}
