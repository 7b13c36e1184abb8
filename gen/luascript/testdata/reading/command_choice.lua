-- A command name picked from a fixed set of literals: each one is a call.
local lifo = ARGV[2] == '1'
local push = lifo and 'RPUSH' or 'LPUSH'
redis.call(push, KEYS[1], ARGV[1])
local pop = 'LPOP'
if lifo then pop = 'RPOP' end
return redis.call(pop, KEYS[2])
