-- A coroutine body gets its arguments from resume, out of the reading's sight.
local co = coroutine.wrap(function(k) return redis.call('DEL', k) end)
redis.call('PEXPIRE', KEYS[1], 60000)
redis.call('PEXPIRE', KEYS[2], 60000)
return co(ARGV[1])
