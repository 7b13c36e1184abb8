package luatest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisKeyspace reads a Keyspace from a real Redis through go-redis, with read
// commands only: SCAN (MATCH match, "*" for every key; COUNT 1000), then TYPE,
// the value (GET, HGETALL, ZRANGE ... WITHSCORES) and PTTL of each key. A key
// that disappears while it is read is left out. Keys of other types are
// reported with their Type and TTL but no value.
func RedisKeyspace(ctx context.Context, c redis.Cmdable, match string) (Keyspace, error) {
	if match == "" {
		match = "*"
	}
	seen := map[string]bool{}
	var keys []string
	var cursor uint64
	for {
		batch, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("luatest: SCAN: %w", err)
		}
		for _, k := range batch {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	ks := Keyspace{}
	for _, k := range keys {
		e, ok, err := readEntry(ctx, c, k)
		if err != nil {
			return nil, fmt.Errorf("luatest: reading key %q: %w", k, err)
		}
		if ok {
			ks[k] = e
		}
	}
	return ks, nil
}

// readEntry reads one key; ok is false when the key is gone.
func readEntry(ctx context.Context, c redis.Cmdable, key string) (Entry, bool, error) {
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		return Entry{}, false, err
	}
	e := Entry{Type: typ}
	switch typ {
	case "none":
		return Entry{}, false, nil
	case "string":
		v, err := c.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return Entry{}, false, nil
		}
		if err != nil {
			return Entry{}, false, err
		}
		e.String = v
	case "hash":
		v, err := c.HGetAll(ctx, key).Result()
		if err != nil {
			return Entry{}, false, err
		}
		if len(v) == 0 {
			return Entry{}, false, nil
		}
		e.Hash = v
	case "zset":
		v, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			return Entry{}, false, err
		}
		if len(v) == 0 {
			return Entry{}, false, nil
		}
		for _, z := range v {
			m, ok := z.Member.(string)
			if !ok {
				m = fmt.Sprint(z.Member)
			}
			e.ZSet = append(e.ZSet, Member{Member: m, Score: z.Score})
		}
	}
	ttl, err := c.PTTL(ctx, key).Result()
	if err != nil {
		return Entry{}, false, err
	}
	switch {
	case ttl == -2:
		return Entry{}, false, nil
	case ttl < 0:
		e.TTL = NoTTL
	default:
		e.TTL = ttl.Round(time.Millisecond)
	}
	return e, true, nil
}
