-- KEYS[1] the page's counter; ARGV[1] how many hits; ARGV[2] its TTL in ms.
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then
  -- the first hit: the counter lives one TTL from now, never without one
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return n
