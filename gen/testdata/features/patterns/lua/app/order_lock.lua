if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 30000) then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', 30000)
return 1
