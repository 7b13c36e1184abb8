-- idem_complete: records the outcome of an idempotent call and drops its lock,
-- only for the lock's owner (seed 000 §4, §8). 503 and 504 are transient: they
-- are never recorded as completed (the caller releases instead).
--
-- KEYS[1] record        HASH
-- KEYS[2] lock          owner token
-- ARGV[1] owner
-- ARGV[2] fingerprint
-- ARGV[3] status        HTTP status
-- ARGV[4] response      sanitized MessagePack response
-- ARGV[5] resource_id
-- ARGV[6] record_ttl    ms (24 h)
-- Reply: the record's version
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER idem_complete: the lock is not held by this owner')
end
local status = tonumber(ARGV[3])
if status == 503 or status == 504 then
  return redis.error_reply('TRANSIENT idem_complete: 503 and 504 are not recorded; release instead')
end
local fingerprint = redis.call('HGET', KEYS[1], 'fingerprint')
if fingerprint and fingerprint ~= ARGV[2] then
  return redis.error_reply('CONFLICT idem_complete: the record holds another fingerprint')
end
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'state', 'completed', 'fingerprint', ARGV[2], 'status', ARGV[3],
  'response', ARGV[4], 'resource_id', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('DEL', KEYS[2])
return version
