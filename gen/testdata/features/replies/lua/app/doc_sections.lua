#!lua flags=no-writes
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
return {{'intro', 12, {{'ann', 1700000000000, 'neutral'}, {'bob', false, 'warm'}}}, {'body', 300, {}}}
