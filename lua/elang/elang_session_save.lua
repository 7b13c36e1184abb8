-- elang_session_save: writes a session unless a newer one is stored (Elang Redis
-- doc, seed 003: a stale writer must not overwrite a newer session; data expires
-- after two hours). The stored version must be the one the writer read (0: the
-- session must not exist), and no other owner may hold the session's lock. The
-- writer's own lock is left as it is.
--
-- KEYS[1] data          hash {version, subject, body}
-- KEYS[2] lock          owner token
-- ARGV[1] owner
-- ARGV[2] version       the version the writer read; 0 creates
-- ARGV[3] subject
-- ARGV[4] body
-- ARGV[5] ttl           ms
-- Reply: the version stored
local data, lock = KEYS[1], KEYS[2]
local owner, read, subject, body, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local holder = redis.call('GET', lock)
if holder and holder ~= owner then
  return redis.error_reply('LOCKED elang_session_save: another owner holds the session lock')
end
local stored = tonumber(redis.call('HGET', data, 'version') or '0')
if stored ~= read then
  return redis.error_reply('STALE elang_session_save: the session is at version ' .. stored .. ', the writer read ' .. read)
end
local version = stored + 1
redis.call('HSET', data, 'version', version, 'subject', subject, 'body', body)
redis.call('PEXPIRE', data, ttl)
return version
