-- redis.call aliased, the alias replaced in a branch by code the reading cannot see.
local rcall = redis.call
if ARGV[1] == 'x' then
  rcall = loadstring(ARGV[1])
end
return rcall('DEL', KEYS[1], KEYS[2])
