#!lua flags=no-writes
local tags = redis.call('SMEMBERS', KEYS[1])
table.sort(tags)
return tags
