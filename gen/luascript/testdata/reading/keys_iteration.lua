-- Every KEYS position at once: locks over several resources, deleting a
-- caller's set of keys, counting them.
local rcall = redis.call
for i, k in ipairs(KEYS) do
  if rcall('SET', k, ARGV[1], 'NX', 'PX', ARGV[2]) == false then
    for j = 1, i - 1 do rcall('DEL', KEYS[j]) end
    return 0
  end
end
local n = #KEYS + select('#', unpack(ARGV))
rcall('UNLINK', unpack(KEYS))
return rcall('EXISTS', unpack(KEYS, 2)) + n
