-- A job that finishes tells its parent: the parent's whole key is kept in the
-- job's hash (a name read from data), and its dependencies set is built on it.
local rcall = redis.call
local parentKey = rcall('HGET', KEYS[1], 'parentKey')
rcall('HSET', KEYS[1], 'state', 'done')
if parentKey then
  rcall('SREM', parentKey .. ':deps', ARGV[1])
  if rcall('SCARD', parentKey .. ':deps') == 0 then
    rcall('HSET', parentKey, 'state', 'ready')
  end
end
return 1
