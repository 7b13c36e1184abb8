-- jwks_negative_mark: remembers that a kid was not found in the JWKS (seed 000 §3).
--
-- KEYS[1] marker        string "1"
-- ARGV[1] ttl           ms (30 s, from the spec)
-- Reply: created (1 when no marker was there)
local old = redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'GET')
if old then
  return 0
end
return 1
