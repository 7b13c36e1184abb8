-- A helper that calls itself hands back, at the second level, an argument it
-- was given there: the key it returns may be ARGV[1].
local function pick(k, n)
  if n == 0 then return k end
  return pick(ARGV[1], n - 1)
end
local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], 1000)
return redis.call('DEL', pick(KEYS[1], 1))
