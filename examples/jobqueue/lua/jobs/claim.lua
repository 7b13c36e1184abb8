-- KEYS[1] the queue's job namespace, KEYS[2] its ready list, KEYS[3] its
-- active set; ARGV[1] the worker's name, ARGV[2] the lease in ms. The lease
-- key expires with the lease; the active set scores the job by the same
-- deadline, so reap finds the jobs whose lease ran out.
local id = redis.call('LPOP', KEYS[2])
if not id then
  return {false, false, 0}
end
local job = KEYS[1] .. id
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', job .. ':lease', ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), id)
redis.call('HSET', job, 'state', 'active', 'worker', ARGV[1])
local attempts = redis.call('HINCRBY', job, 'attempts', 1)
return {id, redis.call('HGET', job, 'payload'), attempts}
