#!lua flags=no-writes
-- The hash's field names grouped by first letter (an array of arrays of
-- strings), a tone per group, and the number of fields.
local names = redis.call('HKEYS', KEYS[1])
table.sort(names)
local groups, tones, first = {}, {}, nil
for _, name in ipairs(names) do
  local letter = string.sub(name, 1, 1)
  if letter ~= first then
    first = letter
    groups[#groups + 1] = {}
    tones[#tones + 1] = (#groups % 2 == 1) and 'neutral' or 'warm'
  end
  local g = groups[#groups]
  g[#g + 1] = name
end
return {groups, tones, #names}
