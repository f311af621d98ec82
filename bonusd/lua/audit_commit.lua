-- One audit commit (bonusd/audit/store.py, `AuditStore.commit`) in one atomic call: the
-- records are appended to the site's trail and to the subject's ledger, with the step's own
-- writes, only if nobody wrote meanwhile: the ledger still holds the records the caller
-- decided on, and the trail's last record is still the one the caller chained to.
--
-- KEYS[1]    the audit trail (list)
-- KEYS[2]    the subject's ledger (list)
-- KEYS[3..]  the keys of the step's own writes
-- ARGV[1]    how many records the ledger must hold
-- ARGV[2]    the trail's last record as the caller read it ('' for an empty trail)
-- ARGV[3]    n, how many records follow
-- ARGV[4..3+n]  the records (canonical JSON)
-- ARGV[4+n]  the channel told of a commit with records (the live push listens), and
-- ARGV[5+n]  what it is told (the subject)
-- then per write: command, index of its key in KEYS, count c, c arguments; the commands
-- are those a step writes with (SET, HSET, HSETNX, ZADD, ZREM)
--
-- Returns {1}                   committed
--         {0, 'ledger'}         the ledger changed: decide again
--         {0, 'head', last}     another record landed on the trail: chain to `last`
local WRITES = {SET = true, HSET = true, HSETNX = true, ZADD = true, ZREM = true}
if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[1]) then
  return {0, 'ledger'}
end
local last = redis.call('LINDEX', KEYS[1], -1) or ''
if last ~= ARGV[2] then
  return {0, 'head', last}
end
local n = tonumber(ARGV[3])
local at = 6 + n
while at <= #ARGV do  -- every write is one a step makes, before anything is written
  if not WRITES[ARGV[at]] then
    return redis.error_reply('audit commit: ' .. ARGV[at] .. ' is not a step write')
  end
  at = at + 3 + tonumber(ARGV[at + 2])
end
at = 4
while at < 4 + n do  -- in slices: unpack has a limit on how many values it spreads
  local stop = math.min(at + 499, 3 + n)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, at, stop))
  redis.call('RPUSH', KEYS[2], unpack(ARGV, at, stop))
  at = stop + 1
end
local channel, message = ARGV[at], ARGV[at + 1]
at = at + 2
while at <= #ARGV do
  local command, key, count = ARGV[at], KEYS[tonumber(ARGV[at + 1])], tonumber(ARGV[at + 2])
  redis.call(command, key, unpack(ARGV, at + 3, at + 2 + count))
  at = at + 3 + count
end
if n > 0 then
  redis.call('PUBLISH', channel, message)
end
return {1}
