-- load builds a function from text the reading never sees.
local f = load(function() return nil end)
redis.call('DEL', KEYS[1], KEYS[2])
return f and #ARGV[1] or 0
