-- rate_limit_sliding_refund: gives back what rate_limit_sliding took for a
-- request that a later limit of its route denied (seed 000 §3): removes exactly
-- that request's members, nonce:1 .. nonce:cost, and nothing else. Entries that
-- already left the window are simply not there. The bucket keeps its expiry.
--
-- KEYS[1] bucket        ZSET member -> request time (ms)
-- ARGV[1] cost          units the request took, 1..10000
-- ARGV[2] nonce         the request's nonce
-- Reply: refunded (1 when any member was removed)
local key = KEYS[1]
local cost = tonumber(ARGV[1])
local nonce = ARGV[2]
if not cost or cost < 1 or cost > 10000 then
  return redis.error_reply('BAD_ARG rate_limit_sliding_refund: want 1 <= cost <= 10000')
end
if redis.call('TYPE', key)['ok'] ~= 'zset' then
  return 0
end
local removed = 0
for i = 1, cost, 100 do
  local members = {}
  for j = i, math.min(i + 99, cost) do
    members[#members + 1] = nonce .. ':' .. j
  end
  removed = removed + redis.call('ZREM', key, unpack(members))
end
return removed > 0 and 1 or 0
