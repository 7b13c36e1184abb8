-- KEYS[1] the queue's job namespace, KEYS[2] its active set, KEYS[3] its
-- ready list; ARGV[1] how many jobs to look at at most, ARGV[2] the ready
-- list's max_len. A job whose deadline passed and whose lease key is gone
-- goes back to the end of the ready list; at its deadline to the
-- millisecond the lease still exists (Redis expires a key once the clock is
-- past it), so the next reap takes it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(ARGV[2])
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ARGV[1])
local requeued = 0
for _, id in ipairs(due) do
  local job = KEYS[1] .. id
  if redis.call('EXISTS', job .. ':lease') == 0 then
    if redis.call('LLEN', KEYS[3]) >= keep then
      break
    end
    redis.call('ZREM', KEYS[2], id)
    redis.call('HSET', job, 'state', 'ready')
    redis.call('RPUSH', KEYS[3], id)
    requeued = requeued + 1
  end
end
redis.call('LTRIM', KEYS[3], 0, 99999)
return requeued
