-- rate_limit_token_bucket_refund: gives back what rate_limit_token_bucket took
-- for a request that a later limit of its route denied (seed 000 §3): window*cost
-- of tat (1/limit ms), floored at a full bucket. Only what is still ahead of now
-- can be given back: a charge whose reset_at passed has refilled already, and the
-- tat there belongs to later requests. A bucket under another limit or window is
-- left alone. A bucket that is full again is deleted; otherwise it keeps its expiry.
--
-- KEYS[1] bucket        HASH base (ms), tat (1/limit ms after base), limit, window
-- ARGV[1] limit         the limit the charge ran with
-- ARGV[2] window        the window the charge ran with, ms
-- ARGV[3] cost          tokens the request took
-- ARGV[4] reset_at      the reset_at (ms) rate_limit_token_bucket answered for the charge
-- Reply: refunded (1 when tat was given back)
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local charged_reset = tonumber(ARGV[4])
if not (limit and window and cost and charged_reset) or limit < 1 or window < 1 or cost < 1 or cost > limit or charged_reset < 1 then
  return redis.error_reply('BAD_ARG rate_limit_token_bucket_refund: want limit, window, cost and reset_at >= 1 and cost <= limit')
end
if redis.call('TYPE', key)['ok'] ~= 'hash' then
  return 0
end
local state = redis.call('HMGET', key, 'base', 'tat', 'limit', 'window')
local base, stored = tonumber(state[1]), tonumber(state[2])
if not (base and stored) or tonumber(state[3]) ~= limit or tonumber(state[4]) ~= window then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = math.max(stored - (now - base) * limit, 0)
local give = math.min(window * cost, tat, math.max(charged_reset - now, 0) * limit)
if give <= 0 then
  return 0
end
tat = tat - give
if tat == 0 then
  redis.call('DEL', key)
else
  redis.call('HSET', key, 'base', now, 'tat', tat)
end
return 1
