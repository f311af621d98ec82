-- The floor-row change log (prepended to every script that writes floor-row), so that a
-- daemon's mirror of floor-row (floormirror.py) catches up by reading only what changed
-- (floor_sync.lua):
--   floor-row-seq  string  bumped once by each call that changed some card's row
--   floor-row-log  zset    card -> the floor-row-seq of its row's last change (written or
--                          removed)
--   floor-row-low  string  changes up to this seq may be trimmed from the log: a mirror
--                          older than it reads floor-row whole
-- The horizon: changes older than the last FLOOR_LOG_KEEP calls are trimmed (every 1,000
-- calls), and a mirror older than that reads floor-row whole (55 ms at 10,000 rows, measured).
-- A following mirror syncs every 0.25 s, so it needs a fraction of a second of the log;
-- the horizon lets one that fell behind (a stalled loop, a Redis blip) still catch up by
-- a delta for about a minute of the busiest floor. At a 10,000-EGM Saturday peak (1,363
-- events/s) the ingest made 441 logged calls/s (3.1 events per call;
-- `loadtests/bench_rowlog.py`, docs/draws.md), so 40,000 calls are 91 s of the peak
-- (29 s even if every event were a call of its own), and hours of a quiet floor. Longer
-- buys nothing: after a minute of the peak every card has changed, and a delta costs what
-- a full read does. The log holds each card once: its size is the cards changed within
-- the horizon (at that peak the whole floor, 10,000 cards in 988 KB, beside floor-row's
-- 1.25 MB), at most the floor and the cards that left it within the horizon.
-- A quiet floor makes few, large calls, so 40,000 calls can be a whole day and the log
-- would keep every card seen that day (a week's soak: 42,000 cards after one day), so the
-- log is also capped by cards: at most twice the cards on the floor (at least 10,000),
-- the oldest changes trimmed first, looked at every 64 calls, in batches of 1,000.
local FLOOR_LOG_KEEP = 40000
local FLOOR_LOG_MIN_CARDS = 10000
local function log_floor_rows(base, changed)
  if next(changed) == nil then return end
  local seq = redis.call('INCR', base .. 'floor-row-seq')
  local log = base .. 'floor-row-log'
  local args = {}
  for card in pairs(changed) do
    args[#args + 1] = seq
    args[#args + 1] = card
    if #args >= 1000 then redis.call('ZADD', log, unpack(args)); args = {} end
  end
  if #args > 0 then redis.call('ZADD', log, unpack(args)) end
  local low = 0
  if seq % 1000 == 0 and seq > FLOOR_LOG_KEEP then
    low = seq - FLOOR_LOG_KEEP
  end
  if seq % 64 == 0 then  -- the oldest beyond the cap go (in batches of 1,000 or more)
    local logged = redis.call('ZCARD', log)
    local cap = math.max(FLOOR_LOG_MIN_CARDS, 2 * redis.call('HLEN', base .. 'floor-row'))
    if logged > cap + 1000 then
      local cut = redis.call('ZRANGE', log, logged - cap - 1, logged - cap - 1, 'WITHSCORES')
      low = math.max(low, tonumber(cut[2]))
    end
  end
  if low > 0 and low > tonumber(redis.call('GET', base .. 'floor-row-low') or '0') then
    redis.call('ZREMRANGEBYSCORE', log, '-inf', low)
    redis.call('SET', base .. 'floor-row-low', low)
  end
end

