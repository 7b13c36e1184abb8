package safety_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/hanchat/luagen/generated/vm2"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// startSafetyRedis starts a redis-server for vm2's db0 and returns it with a client
// of the default user.
func startSafetyRedis(t *testing.T, opts ...redistest.Option) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t, opts...)
	return srv, srv.Client(vm2.DB0)
}

// redisPID is the process id of the server c is connected to (INFO server).
func redisPID(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatal("INFO server has no process_id")
	return 0
}
