-- elang_session_open: a session read takes the session's own lock (Elang Redis
-- doc, seed 003: sessions). SET NX PX for owner (the owner that holds it gets a
-- fresh lease); only then is the session read.
--
-- KEYS[1] data          hash {version, subject, body}
-- KEYS[2] lock          owner token
-- ARGV[1] owner
-- ARGV[2] lock_ttl      ms
-- Reply: {acquired, lock_ttl_ms, found, version, subject, body}
local data, lock, owner, ttl = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
if not redis.call('SET', lock, owner, 'NX', 'PX', ttl) then
  if redis.call('GET', lock) ~= owner then
    local left = redis.call('PTTL', lock)
    if left < 0 then
      left = 0
    end
    return {0, left, 0, 0, '', ''}
  end
  redis.call('PEXPIRE', lock, ttl)
end
local v = redis.call('HMGET', data, 'version', 'subject', 'body')
if not v[1] then
  return {1, 0, 0, 0, '', ''}
end
return {1, 0, 1, tonumber(v[1]), v[2] or '', v[3] or ''}
