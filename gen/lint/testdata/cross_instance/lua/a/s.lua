-- A hash field value and a local named like b's prefix are not b's: only the
-- names the script passes as keys and channels are.
local other_count = redis.call('HGET', KEYS[1], 'other')
redis.call('PUBLISH', 'other:events', other_count)
return redis.call('EXISTS', KEYS[1])
