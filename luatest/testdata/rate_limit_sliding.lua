#!lua
-- Sliding-window rate limit.
-- KEYS[1]: the window (a sorted set of request ids scored by time)
-- ARGV[1]: now (Unix ms), ARGV[2]: window (ms), ARGV[3]: limit, ARGV[4]: request id
-- Reply: {allowed (1/0), requests in the window, retry after (ms)}
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count >= limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {0, count, tonumber(oldest[2]) + window - now}
end
redis.call('ZADD', key, now, ARGV[4])
redis.call('PEXPIRE', key, window)
return {1, count + 1, 0}
