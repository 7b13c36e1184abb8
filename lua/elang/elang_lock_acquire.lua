-- elang_lock_acquire: takes a named lock for its owner (Elang Redis doc, seed 003:
-- Runtime::lock). SET NX PX; the owner that already holds the lock gets a fresh
-- lease, anyone else learns how long the holder's lease runs.
--
-- KEYS[1] lock          owner token
-- ARGV[1] owner
-- ARGV[2] lease         ms
-- Reply: {acquired, ttl_ms}
local lock, owner, lease = KEYS[1], ARGV[1], ARGV[2]
if redis.call('SET', lock, owner, 'NX', 'PX', lease) then
  return {1, tonumber(lease)}
end
if redis.call('GET', lock) == owner then
  redis.call('PEXPIRE', lock, lease)
  return {1, tonumber(lease)}
end
local ttl = redis.call('PTTL', lock)
if ttl < 0 then
  ttl = 0
end
return {0, ttl}
