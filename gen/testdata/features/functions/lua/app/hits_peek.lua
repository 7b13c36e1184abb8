#!lua flags=no-writes
-- hits_peek: the page's counter, 0 when absent.
return tonumber(redis.call('GET', KEYS[1]) or '0')
