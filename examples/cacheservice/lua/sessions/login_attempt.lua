-- login_attempt: sliding-window limit of one account's login attempts. Each
-- attempt is one ZSET member named by its id, scored with the time it was
-- counted; attempts older than the window are dropped first. An attempt whose id
-- is already a member was counted by an earlier call (a resend after a lost
-- reply) and is not counted again.
--
-- KEYS[1] attempts   ZSET attempt id -> time (ms)
-- ARGV[1] limit      attempts allowed per window
-- ARGV[2] window     window length, ms
-- ARGV[3] jitter     extra TTL, ms (from Go, spreads expiries)
-- ARGV[4] attempt    the attempt's id
-- Reply: {allowed, remaining, duplicate}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local jitter = tonumber(ARGV[3])
local attempt = ARGV[4]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if redis.call('ZSCORE', key, attempt) then
  return {1, limit - count, 1}
end
if count >= limit then
  return {0, 0, 0}
end
redis.call('ZADD', key, now, attempt)
redis.call('PEXPIRE', key, window + jitter)
return {1, limit - count - 1, 0}
