-- Refresh the tier and exclusion in the floor-row of members who are on the floor now,
-- after their records changed (an import), in the same transaction as the records.
-- KEYS[1]  the site's floor-row hash;  KEYS[2]  its member-index hash
-- ARGV     base, then the cards whose member records were just written
-- Returns  how many floor-rows were rewritten.
local head = '^(' .. string.rep('[^\t]*\t', 8) .. ')[^\t]*\t[^\t]*\t([^\t]*)$'
local n = 0
local changed = {}
for i = 2, #ARGV do
  local card = ARGV[i]
  local row = redis.call('HGET', KEYS[1], card)
  if row then
    local tier, excluded = '', '0'
    local m = redis.call('HGET', KEYS[2], card)
    if m then
      tier, excluded = string.match(m, '^([^|]*)|[^|]*|([^|]*)')
      tier, excluded = tier or '', excluded == '1' and '1' or '0'
    end
    local start, day = string.match(row, head)
    if start then
      local new = start .. tier .. '\t' .. excluded .. '\t' .. day
      if new ~= row then
        redis.call('HSET', KEYS[1], card, new)
        changed[card] = true
      end
      n = n + 1
    end
  end
end
log_floor_rows(ARGV[1], changed)
return n
