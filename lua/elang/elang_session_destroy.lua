-- elang_session_destroy: ends a session, its data and its lock (Elang Redis doc,
-- seed 003: a session whose authentication SQL revoked ends).
--
-- KEYS[1] data          hash
-- KEYS[2] lock          owner token
-- Reply: 1 when the session existed, else 0
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
return existed
