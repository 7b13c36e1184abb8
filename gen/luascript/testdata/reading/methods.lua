-- Helpers kept in a table and called as methods.
local Queue = {}
Queue.__index = Queue
function Queue.new(wait, active) return setmetatable({wait = wait, active = active}, Queue) end
function Queue:push(v) return redis.call('LPUSH', self.wait, v) end
local q = Queue.new(KEYS[1], KEYS[2])
return q:push(ARGV[1])
