local n = 0
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[2], 'NX', 'PX', 90000) then
    n = n + 1
  end
end
redis.call('PUBLISH', ARGV[1], n)
return n
