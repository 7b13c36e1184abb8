-- Everything here is allowed: aliases never reassigned (also through another
-- local and inside loops and closures), KEYS read through the reading
-- functions, a spread after fixed keys, numkeys and keywords as literals.
local key = KEYS[1]
local same = key
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], 60000) end
for _, k in ipairs(KEYS) do redis.log(redis.LOG_DEBUG, k) end
local function touch() return redis.call('PEXPIRE', same, 60000) end
redis.call('ZADD', key, 1, ARGV[1])
redis.call('ZREM', key, unpack({ARGV[1], 'x'}))
local count = tonumber(ARGV[1]) or 1
redis.call('XREAD', 'COUNT', count, 'STREAMS', KEYS[2], '0-0')
redis.call('OBJECT', 'ENCODING', key)
redis.call('PUBLISH', 't:news', table.concat(KEYS, ','))
return touch() + redis.call('ZUNIONSTORE', KEYS[2], 2, key, KEYS[2]) + #KEYS
