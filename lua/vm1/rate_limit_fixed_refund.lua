-- rate_limit_fixed_refund: gives back what rate_limit_fixed took for a request
-- that a later limit of its route denied (seed 000 §3), only within the window it
-- was taken from. A window is known by its end: the charge's reset_at. Another
-- window of the key opens only after that one ended, so it ends at least a window
-- later; a refund that finds the end moved by more than half a window finds
-- another window and gives nothing back. A counter back at 0 is deleted, as if
-- the window had never opened; otherwise it keeps its expiry.
--
-- KEYS[1] bucket        counter
-- ARGV[1] cost          units the request took
-- ARGV[2] window        the limit's window, ms
-- ARGV[3] reset_at      the reset_at (ms) rate_limit_fixed answered for the charge
-- Reply: refunded (1 when units were given back)
local key = KEYS[1]
local cost = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local charged_reset = tonumber(ARGV[3])
if not (cost and window and charged_reset) or cost < 1 or window < 1 or charged_reset < 1 then
  return redis.error_reply('BAD_ARG rate_limit_fixed_refund: want cost, window and reset_at >= 1')
end
if redis.call('TYPE', key)['ok'] ~= 'string' then
  return 0
end
local raw = redis.call('GET', key)
if not (#raw <= 15 and string.match(raw, '^[1-9]%d*$')) then
  return 0
end
local count = tonumber(raw)
local expires = redis.call('PEXPIRETIME', key)
if expires < 0 then
  return 0
end
-- rate_limit_fixed answers reset_at = the key's expiry time + 1 ms.
if math.abs(expires + 1 - charged_reset) > math.floor(window / 2) then
  return 0 -- another window
end
if count <= cost then
  redis.call('DEL', key)
else
  redis.call('DECRBY', key, cost)
end
return 1
