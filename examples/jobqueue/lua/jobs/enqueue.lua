-- KEYS[1] the queue's job namespace, KEYS[2] its ready list, KEYS[3] its
-- schedule; ARGV[1] the job's id, ARGV[2] its payload, ARGV[3] its delay in
-- ms, ARGV[4] the ready list's max_len. No key gets a TTL: the spec says ttl
-- none, and the bound is kept by refusing a job when the list (or the
-- schedule) is full.
local job = KEYS[1] .. ARGV[1]
if redis.call('EXISTS', job) == 1 then
  return false
end
local keep = tonumber(ARGV[4])
local delay = tonumber(ARGV[3])
if delay > 0 then
  if redis.call('ZCARD', KEYS[3]) >= keep then
    return redis.error_reply('QUEUE_FULL the schedule holds its max_len jobs')
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', job, 'state', 'delayed', 'payload', ARGV[2], 'attempts', 0)
  redis.call('ZADD', KEYS[3], now + delay, ARGV[1])
  return true
end
if redis.call('LLEN', KEYS[2]) >= keep then
  return redis.error_reply('QUEUE_FULL the ready list holds its max_len jobs')
end
redis.call('HSET', job, 'state', 'ready', 'payload', ARGV[2], 'attempts', 0)
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], 0, 99999)
return true
