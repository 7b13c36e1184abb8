-- ARGV rewritten through another name: what the wrapper checked is gone.
local args = ARGV
args[1] = KEYS[1]
return redis.call('DEL', KEYS[1], KEYS[2])
