-- A ledger's length and the values of some keys, in one call (draws/ledger.py): a step
-- reads its ledger's length with its committed seeds as one reply, not one per key.
-- KEYS[1]  the ledger list; KEYS[2..]  the keys whose values are wanted (same hash slot)
-- Returns  {length, value or nil, ...}
local out = {redis.call('LLEN', KEYS[1])}
for i = 2, #KEYS, 1000 do
  local got = redis.call('MGET', unpack(KEYS, i, math.min(i + 999, #KEYS)))
  for j = 1, #got do
    out[#out + 1] = got[j]
  end
end
return out
