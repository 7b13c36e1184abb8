-- jwks_negative_mark: remembers that a kid was not found in the JWKS (seed 000 §3),
-- for a fixed 30 s from the first miss. Marking again does not restart the TTL, so
-- a kid an attacker keeps sending is still looked up again every 30 s (a key
-- rotated in meanwhile is found).
--
-- KEYS[1] marker        string "1"
-- ARGV[1] ttl           ms (30 s, from the spec)
-- Reply: created (1 when no marker was there)
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then
  return 1
end
if redis.call('PTTL', KEYS[1]) == -1 then
  -- A marker without expiry (not written by this script) would hide the kid forever.
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 0
