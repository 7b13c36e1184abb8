-- A command name picked from a table that holds an argument.
local cmds = {'PEXPIRE', ARGV[1]}
redis.call(cmds[1], KEYS[1], 60000)
return redis.call(cmds[2], KEYS[2], 60000)
