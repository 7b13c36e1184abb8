-- idem_reserve: reserves an idempotency key (seed 000 §4, §8).
-- absent -> in_progress, with the lock taken by this owner;
-- same fingerprint, completed -> the stored response;
-- same fingerprint, in progress -> in_progress while the owner's lock lives, else a
--   takeover (the owner died; this caller runs it now);
-- another fingerprint -> conflict.
--
-- KEYS[1] record        HASH state, fingerprint, status, response, resource_id, version
-- KEYS[2] lock          owner token
-- ARGV[1] fingerprint   hex SHA-256 of the request
-- ARGV[2] owner         random owner token
-- ARGV[3] lock_ttl      ms
-- ARGV[4] record_ttl    ms (24 h)
-- Reply: {state, status, response, resource_id, version}
local rec = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'status', 'response', 'resource_id', 'version')
local state, fingerprint = rec[1], rec[2]

if not state then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    -- The record is gone (evicted, restored empty) but its owner still works on it.
    return {'in_progress', 0, false, false, 0}
  end
  redis.call('HSET', KEYS[1], 'state', 'in_progress', 'fingerprint', ARGV[1], 'version', 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  return {'reserved', 0, false, false, 1}
end

local version = tonumber(rec[6]) or 0
if fingerprint ~= ARGV[1] then
  return {'conflict', 0, false, false, version}
end
if state == 'completed' then
  return {'completed', tonumber(rec[3]) or 0, rec[4], rec[5], version}
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {'in_progress', 0, false, false, version}
end
-- In progress, but the owner's lock expired: take over.
version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return {'reserved', 0, false, false, version}
