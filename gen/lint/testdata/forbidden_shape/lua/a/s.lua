local state = redis.call('HGET', KEYS[1], 'state')
redis.call('HINCRBY', KEYS[1], 'polls', 1)
return state and 1 or 0
