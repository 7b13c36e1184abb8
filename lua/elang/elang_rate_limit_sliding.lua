-- elang_rate_limit_sliding: lua/vm1/rate_limit_sliding.lua on the Elang deployment prefix (Elang Redis doc,
-- seed 003: rate limits). The same Lua but for the script name in its comments and
-- error text; services/elang's TestRateLimitScriptsAreVM1Algorithms keeps it so.
--
-- rate_limit_sliding: sliding-window limit over a ZSET of request timestamps
-- (seed 000 §3, §8). Old entries are dropped, the window counted, this request's
-- cost added and the expiry set, atomically. Each unit is one ZSET member, so
-- limit and cost are capped at 10000 (a bucket stays small and a call short).
--
-- KEYS[1] bucket        ZSET member -> request time (ms)
-- ARGV[1] limit         units allowed per window, 1..10000
-- ARGV[2] window        window length, ms
-- ARGV[3] jitter        extra TTL, ms (from Go, spreads expiries)
-- ARGV[4] cost          units this request consumes, 1..limit
-- ARGV[5] peek          "1": evaluate without consuming (no writes)
-- ARGV[6] nonce         unique per request: members are nonce:1 .. nonce:cost
-- Reply: {allowed, remaining, retry_after_ms, reset_at_ms}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local jitter = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local peek = ARGV[5] == '1'
local nonce = ARGV[6]
if not (limit and window and jitter and cost) or limit < 1 or limit > 10000 or window < 1 or jitter < 0 or cost < 1 or cost > limit then
  return redis.error_reply('BAD_ARG elang_rate_limit_sliding: want 1 <= cost <= limit <= 10000, window >= 1 and jitter >= 0')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- An entry stamped s is in the window while s > now - window (scores are whole ms).
local oldest = now - window + 1

-- A bucket of another type was left by another algorithm (a policy change while
-- it lived). Buckets are disposable: it is dropped, or read as empty by a peek.
local typ = redis.call('TYPE', key)['ok']
local foreign = typ ~= 'none' and typ ~= 'zset'
if foreign and not peek then
  redis.call('DEL', key)
end

local count = 0
if peek then
  if not foreign then
    count = redis.call('ZCOUNT', key, oldest, '+inf')
  end
else
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  count = redis.call('ZCARD', key)
end

local allowed = count + cost <= limit
local retry_after = 0
if allowed then
  if not peek then
    for i = 1, cost, 100 do
      local args = {}
      for j = i, math.min(i + 99, cost) do
        args[#args + 1] = now
        args[#args + 1] = nonce .. ':' .. j
      end
      redis.call('ZADD', key, unpack(args))
    end
    redis.call('PEXPIRE', key, window + jitter)
    count = count + cost
  end
else
  -- The (count + cost - limit)-th oldest entry in the window must leave first; it
  -- leaves at its stamp + window, the first millisecond the cost fits.
  local need = count + cost - limit
  local e = redis.call('ZRANGE', key, oldest, '+inf', 'BYSCORE', 'LIMIT', need - 1, 1, 'WITHSCORES')
  retry_after = tonumber(e[2]) + window - now
end

local remaining = limit - count
if peek and allowed then
  remaining = remaining - cost
end

local reset_at = now
if count > 0 then
  local newest = redis.call('ZRANGE', key, '+inf', oldest, 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if newest[2] then
    reset_at = tonumber(newest[2]) + window
  end
end
if peek and allowed then
  reset_at = now + window
end
return {allowed and 1 or 0, remaining, retry_after, reset_at}
