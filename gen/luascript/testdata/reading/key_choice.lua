-- A local holding one of two KEYS positions.
local paused = redis.call('HEXISTS', KEYS[1], 'paused') == 1
local target = paused and KEYS[3] or KEYS[2]
redis.call('LPUSH', target, ARGV[1])
local other
if paused then other = KEYS[2] else other = KEYS[3] end
return redis.call('LLEN', other)
