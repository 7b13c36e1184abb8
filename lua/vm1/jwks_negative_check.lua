#!lua flags=no-writes
-- jwks_negative_check: is a negative JWKS marker present? (seed 000 §3)
--
-- KEYS[1] marker
-- Reply: present (1 or 0)
return redis.call('EXISTS', KEYS[1])
