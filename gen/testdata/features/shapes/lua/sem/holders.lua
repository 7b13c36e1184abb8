#!lua flags=no-writes
-- holders: ARGV[1] chooses the reply: count, ids, or leases ({holder, until}).
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
if ARGV[1] == 'count' then
  return redis.call('ZCOUNT', KEYS[1], ms, '+inf')
end
local all = redis.call('ZRANGEBYSCORE', KEYS[1], ms, '+inf', 'WITHSCORES')
local out = {}
for i = 1, #all, 2 do
  if ARGV[1] == 'ids' then
    out[#out + 1] = all[i]
  else
    out[#out + 1] = {all[i], tonumber(all[i + 1])}
  end
end
return out
