-- A helper that calls itself with varargs is not followed.
local function drop(...)
  local k = ...
  if select('#', ...) > 1 then return drop(select(2, ...)) end
  return redis.call('DEL', k)
end
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], 1000)
return drop(KEYS[1], ARGV[1])
