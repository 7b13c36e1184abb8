-- Deletes stale entries: KEYS[1] the index, KEYS[2] a tally.
local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, member in ipairs(stale) do
  redis.call('ZREM', KEYS[1], member)
  redis.call('INCR', KEYS[2])
end
return #stale
