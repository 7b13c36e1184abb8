-- Refresh a lock the caller owns: a positive TTL renews it, 0 keeps it until
-- it is released.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('PERSIST', KEYS[1])
