-- A guarded attempt (bonusd/access/ratelimit.py), judged and counted in one atomic step so that
-- concurrent attempts cannot all slip past a limit before any of them is counted.
--
-- KEYS[1]       the hash holding the proof (a token record)
-- KEYS[2..n+1]  the failure counters, one per limit
-- ARGV[1]       the proof's field in KEYS[1] (the secret's digest)
-- ARGV[2]       the value offered for it ('' never matches)
-- ARGV[2i+1]    the limit of counter i
-- ARGV[2i+2]    the expiry (seconds) of counter i: housekeeping only
--
-- Returns {0, i}   refused: counter i is at its limit (nothing compared, nothing counted)
--         {1}      passed: the value matches (nothing counted)
--         {2, c1, ..., cn}  failed: every counter counted one more, its count after
local n = #KEYS - 1
for i = 1, n do
  local count = tonumber(redis.call('GET', KEYS[i + 1]) or '0')
  if count >= tonumber(ARGV[2 * i + 1]) then
    return {0, i}
  end
end
if ARGV[2] ~= '' then
  local stored = redis.call('HGET', KEYS[1], ARGV[1])
  if stored and stored == ARGV[2] then
    return {1}
  end
end
local out = {2}
for i = 1, n do
  out[i + 1] = redis.call('INCR', KEYS[i + 1])
  redis.call('EXPIRE', KEYS[i + 1], tonumber(ARGV[2 * i + 2]))
end
return out
