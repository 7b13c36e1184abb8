-- A helper that is fine with KEYS, called once with an argument.
local function drop(k)
  return redis.call('DEL', k)
end
drop(KEYS[1])
drop(KEYS[2])
return drop(ARGV[1])
