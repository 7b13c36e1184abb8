// Package jobs holds a job queue's scripts the way Go services keep them:
// go-redis scripts, a redigo script, a rueidis one and a shared constant.
package jobs

import (
	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// enqueueCmd puts a job on its queue.
//
// KEYS[1] -> jobs:{<queue>}:wait
// KEYS[2] -> jobs:{<queue>}:job:
// ARGV[1] -> job id
// ARGV[2] -> payload
var enqueueCmd = redis.NewScript(`
local rcall = redis.call
rcall("HSET", KEYS[2] .. ARGV[1], "payload", ARGV[2], "state", "waiting")
return rcall("LPUSH", KEYS[1], ARGV[1])
`)

// takeScript moves the next job to the active list.
//
// KEYS[1] -> jobs:{<queue>}:wait
// KEYS[2] -> jobs:{<queue>}:active
// ARGV[1] -> jobs:{<queue>}:job: (the job key prefix)
var takeScript = redis.NewScript(`
local id = redis.call("RPOPLPUSH", KEYS[1], KEYS[2])
if not id then return false end
redis.call("HSET", ARGV[1] .. id, "state", "active")
redis.call("PUBLISH", "jobs:events:" .. id, "active")
return id
`)

const unlockSrc = `if redis.call("GET", KEYS[1]) == ARGV[1] then ` +
	`return redis.call("DEL", KEYS[1]) end return 0`

var unlock = redigo.NewScript(1, unlockSrc)

func counter(c rueidis.Client) *rueidis.Lua {
	return rueidis.NewLuaScript("return redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))")
}
