-- push: a job queue's enqueue. The job, its queue and the id counter are kept
-- without a TTL; the dedupe marker expires with the SET that creates it.
if redis.call('LLEN', KEYS[2]) >= tonumber(ARGV[4]) then
  return redis.error_reply('QUEUE_FULL the queue holds its max_len jobs')
end
if not redis.call('SET', KEYS[5], ARGV[1], 'NX', 'PX', 3600000) then
  return redis.error_reply('DUPLICATE job pushed in the last hour')
end
local seq = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], 'state', 'waiting', 'payload', ARGV[2], 'attempts', 0)
if tonumber(ARGV[3]) > 0 then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
else
  redis.call('LPUSH', KEYS[2], ARGV[1])
  redis.call('LTRIM', KEYS[2], 0, 99999)
end
return seq
