-- The floor-row change log (prepended to every script that writes floor-row), so that a
-- daemon's mirror of floor-row (floormirror.py) catches up by reading only what changed
-- (floor_sync.lua):
--   floor-row-seq  string  bumped once by each call that changed some card's row
--   floor-row-log  zset    card -> the floor-row-seq of its row's last change (written or
--                          removed)
--   floor-row-low  string  changes up to this seq may be trimmed from the log: a mirror
--                          older than it reads floor-row whole
local FLOOR_LOG_KEEP = 100000  -- calls; the log holds each card once, so it stays small
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
  if seq % 1000 == 0 and seq > FLOOR_LOG_KEEP then
    local low = seq - FLOOR_LOG_KEEP
    redis.call('ZREMRANGEBYSCORE', log, '-inf', low)
    redis.call('SET', base .. 'floor-row-low', low)
  end
end

