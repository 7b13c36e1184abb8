-- A helper that calls itself: the key at the second level is an argument.
local function drop(k, depth)
  if depth > 0 then return drop(ARGV[1], depth - 1) end
  return redis.call('DEL', k)
end
drop(KEYS[2], 0)
return drop(KEYS[1], 1)
