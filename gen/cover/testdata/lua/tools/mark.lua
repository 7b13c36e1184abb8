if redis.call('SET', KEYS[1], '1', 'NX', 'PX', 60000) then
  return 1
end
return 0
