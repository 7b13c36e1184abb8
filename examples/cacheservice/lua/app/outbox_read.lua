#!lua flags=no-writes
local start = '-'
if ARGV[1] ~= '' then start = '(' .. ARGV[1] end
local count = tonumber(ARGV[2])
local rows = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', count + 1)
local out = {}
for i = 1, math.min(#rows, count) do
  local id, f = rows[i][1], rows[i][2]
  local e = {}
  for j = 1, #f, 2 do e[f[j]] = f[j + 1] end
  out[i] = {id, e.message_id or '', e.type or '', e.body or ''}
end
return {out, #rows > count and 1 or 0}
