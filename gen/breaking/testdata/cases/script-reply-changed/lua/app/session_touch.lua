local owner = redis.call('HGET', KEYS[1], 'user')
if owner and owner ~= ARGV[1] then
  return redis.error_reply('NOT_OWNER session of another user')
end
local created = 0
if not owner then
  redis.call('HSET', KEYS[1], 'user', ARGV[1], 'created', '1')
  created = 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {'ok', created}
