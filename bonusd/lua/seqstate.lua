-- Contract v2 de-duplication (docs/telemetry.md, "Contract v2"): per device, its current
-- and previous epoch, each with its high-water mark (the highest `seq` applied) and a ring
-- of SEQ_WINDOW bits, one per sequence number of (hwm - SEQ_WINDOW, hwm]: set when that
-- number was applied. Put before apply.lua by floor/store.py; bonusd/floor/sequence.py
-- reads the same record. One field of the site's `devseq` hash per device, TAB-separated
-- (an epoch is printable, so it never holds a TAB):
--   gaps epochs epoch hwm first_ms r1 r2 r3 r4 prev_epoch prev_hwm p1 p2 p3 p4
-- `gaps`: sequence numbers never applied that can no longer be (they left the window, or
-- their epoch was forgotten); `epochs`: how many epochs the device has had; `first_ms`: the
-- earliest event time applied in the current epoch (an unknown epoch older than that is a
-- replay of an old one); `prev_epoch` is "" when there is none.
local SEQ_WINDOW, SEQ_WORDS = 128, 4
-- one match reads a record (the ring's four words spelled out); the previous epoch's part
-- is parsed only when an event of another epoch than the current one needs it
local SEQ_RECORD = '^(%d+)\t(%d+)\t([^\t]+)\t(%d+)\t(%d+)\t(%-?%d+)\t(%-?%d+)\t(%-?%d+)\t' ..
  '(%-?%d+)\t(.*)$'
local SEQ_PREV = '^([^\t]*)\t(%d+)\t(%-?%d+)\t(%-?%d+)\t(%-?%d+)\t(%-?%d+)$'
local SEQ_NONE = '\t0\t0\t0\t0\t0'  -- no previous epoch
local SEQ_CHUNK = 500  -- fields per HMGET or HSET (Lua's unpack has a bounded stack)

-- Counters and ring words stay strings until arithmetic or a bit operation needs them
-- (Lua 5.1 and its bit library take numeric strings): most are never touched.
local function seq_decode(raw)
  if not raw then return {gaps = 0, epochs = 0} end
  local gaps, epochs, epoch, hwm, first, r1, r2, r3, r4, prev = string.match(raw, SEQ_RECORD)
  if not gaps then error('bonusd seqstate.lua: unreadable device sequence record') end
  return {gaps = gaps, epochs = epochs, prev_raw = prev,
          cur = {epoch = epoch, hwm = tonumber(hwm), first = tonumber(first),
                 ring = {r1, r2, r3, r4}}}
end

-- the previous epoch of a state, parsed on first need (nil if none)
local function seq_prev(st)
  if st.prev_raw then
    local epoch, hwm, r1, r2, r3, r4 = string.match(st.prev_raw, SEQ_PREV)
    if epoch and epoch ~= '' then
      st.prev = {epoch = epoch, hwm = tonumber(hwm), ring = {r1, r2, r3, r4}}
    end
    st.prev_raw = nil
  end
  return st.prev
end

-- A number as the record spells it: Lua's own conversion (`..`, "%.14g") is exact for
-- integers below 10^14 and the quickest; beyond, %d (a seq goes up to 2^53 - 1).
local function seq_num(n)
  if type(n) == 'number' and (n >= 1e14 or n <= -1e14) then return string.format('%d', n) end
  return n
end

local function seq_encode(st)
  local cur, prev = st.cur, st.prev_raw
  if not prev then
    local ep = st.prev
    if ep then
      local ring = ep.ring
      prev = ep.epoch .. '\t' .. seq_num(ep.hwm) .. '\t' .. ring[1] .. '\t' .. ring[2] .. '\t' ..
        ring[3] .. '\t' .. ring[4]
    else
      prev = SEQ_NONE
    end
  end
  local ring = cur.ring
  return seq_num(st.gaps) .. '\t' .. st.epochs .. '\t' .. cur.epoch .. '\t' .. seq_num(cur.hwm) ..
    '\t' .. cur.first .. '\t' .. ring[1] .. '\t' .. ring[2] .. '\t' .. ring[3] .. '\t' ..
    ring[4] .. '\t' .. prev
end

-- the states of the devices of the v2 marks ([device, epoch, seq, ts_ms]; a v1 mark has
-- two fields) of a batch, read in a few calls
local function seq_load(key, marks)
  local states, devices = {}, {}
  for _, e in ipairs(marks) do
    if e[3] and not states[e[1]] then
      states[e[1]] = true
      devices[#devices + 1] = e[1]
    end
  end
  for at = 1, #devices, SEQ_CHUNK do
    local last = math.min(#devices, at + SEQ_CHUNK - 1)
    local raws = redis.call('HMGET', key, unpack(devices, at, last))
    for i = at, last do states[devices[i]] = seq_decode(raws[i - at + 1]) end
  end
  return states
end

local function seq_save(key, states)
  local flat = {}
  for device, st in pairs(states) do
    flat[#flat + 1] = device
    flat[#flat + 1] = seq_encode(st)
    if #flat >= 2 * SEQ_CHUNK then
      redis.call('HSET', key, unpack(flat))
      flat = {}
    end
  end
  if #flat > 0 then redis.call('HSET', key, unpack(flat)) end
end

-- the word and the mask of `seq`'s bit in a ring
local function seq_bit(seq)
  local at = seq % SEQ_WINDOW
  return math.floor(at / 32) + 1, bit.lshift(1, at % 32)
end

local function seq_has(ring, seq)
  local word, mask = seq_bit(seq)
  return bit.band(ring[word], mask) ~= 0
end

local function seq_put(ring, seq)
  local word, mask = seq_bit(seq)
  ring[word] = bit.bor(ring[word], mask)
end

local function seq_drop(ring, seq)
  local word, mask = seq_bit(seq)
  ring[word] = bit.band(ring[word], bit.bnot(mask))
end

-- the sequence numbers of an epoch's window not applied (yet)
local function seq_missing(ep)
  local n = 0
  for seq = math.max(1, ep.hwm - SEQ_WINDOW + 1), ep.hwm do
    if not seq_has(ep.ring, seq) then n = n + 1 end
  end
  return n
end

-- Raise an epoch's high-water mark to `seq`; returns how many sequence numbers left the
-- window without having been applied (they are gaps from now on).
local function seq_advance(ep, seq)
  local lost = 0
  if seq - ep.hwm >= SEQ_WINDOW then
    lost = seq_missing(ep) + (seq - SEQ_WINDOW - ep.hwm)  -- and those never in the window
    for i = 1, SEQ_WORDS do ep.ring[i] = 0 end
  else
    for next_seq = ep.hwm + 1, seq do  -- its bit is the one of next_seq - SEQ_WINDOW
      if next_seq > SEQ_WINDOW and not seq_has(ep.ring, next_seq) then lost = lost + 1 end
      seq_drop(ep.ring, next_seq)
    end
  end
  ep.hwm = seq
  seq_put(ep.ring, seq)
  return lost
end

-- Judge one v2 event against its device's state `st` (from seq_decode). Returns 'new'
-- (and `st` now records it) with the gaps it revealed, or 'dup', 'behind' (more than the
-- window below its epoch's high-water mark) or 'old_epoch' (an epoch older than the
-- current one, and not the previous one) with `st` unchanged.
local function seq_judge(st, epoch, seq, ts)
  local ep
  if st.cur and st.cur.epoch == epoch then
    ep = st.cur
  elseif seq_prev(st) and st.prev.epoch == epoch then
    ep = st.prev
  elseif st.cur and ts < st.cur.first then
    return 'old_epoch', 0
  else  -- a boot: a new current epoch; the one before it stays for its late events
    local lost = st.prev and seq_missing(st.prev) or 0
    st.prev = st.cur
    st.cur = {epoch = epoch, hwm = seq, first = ts, ring = {0, 0, 0, 0}}
    seq_put(st.cur.ring, seq)
    st.epochs = st.epochs + 1
    st.gaps = st.gaps + lost
    return 'new', lost
  end
  local lost = 0
  if seq == ep.hwm + 1 then  -- the common case: the next one; its bit was seq - WINDOW's
    local word, mask = seq_bit(seq)
    if seq > SEQ_WINDOW and bit.band(ep.ring[word], mask) == 0 then lost = 1 end
    ep.ring[word] = bit.bor(ep.ring[word], mask)
    ep.hwm = seq
  elseif seq > ep.hwm then
    lost = seq_advance(ep, seq)
  elseif seq <= ep.hwm - SEQ_WINDOW then
    return 'behind', 0
  elseif seq_has(ep.ring, seq) then
    return 'dup', 0
  else
    seq_put(ep.ring, seq)
  end
  if ep == st.cur and ts < ep.first then ep.first = ts end
  st.gaps = st.gaps + lost
  return 'new', lost
end
