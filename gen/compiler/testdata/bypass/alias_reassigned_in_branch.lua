-- A local alias of KEYS[1], retargeted in one branch only.
local key = KEYS[1]
if ARGV[1] == 'other' then
  key = ARGV[1]
end
return redis.call('DEL', key, KEYS[2])
