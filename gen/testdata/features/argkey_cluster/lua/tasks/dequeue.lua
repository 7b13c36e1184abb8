local id = redis.call('RPOP', KEYS[1])
if not id then
  return false
end
redis.call('HSET', ARGV[1] .. id, 'state', 'active')
return id
