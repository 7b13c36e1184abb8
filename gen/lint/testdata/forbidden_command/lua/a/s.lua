local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', 100, '*', 'event', 'joined')
redis.call('PEXPIRE', KEYS[1], 60000)
return id
