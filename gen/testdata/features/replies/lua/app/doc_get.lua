#!lua flags=no-writes
local title = redis.call('HGET', KEYS[1], 'title')
local rev = redis.call('HGET', KEYS[1], 'rev')
return {title, rev and tonumber(rev) or false, {{'intro', 12, {{'ann', false, 'warm'}}}}}
