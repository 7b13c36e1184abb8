-- KEYS[1] the queue's job namespace, KEYS[2] its active set; ARGV[1] the
-- job's id, ARGV[2] the worker's name. Only the lease's holder completes a
-- job: once the lease ran out, the job is another worker's to run again.
local job = KEYS[1] .. ARGV[1]
if redis.call('GET', job .. ':lease') ~= ARGV[2] then
  return redis.error_reply('NOT_OWNER the worker holds no lease on the job')
end
redis.call('DEL', job, job .. ':lease')
redis.call('ZREM', KEYS[2], ARGV[1])
return true
