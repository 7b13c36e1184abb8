package luatest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
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
	n := 1 // the elements read: 0 when the key went away after TYPE
	switch typ {
	case "none":
		return Entry{}, false, nil
	case "string":
		e.String, err = c.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return Entry{}, false, nil
		}
	case "hash":
		e.Hash, err = c.HGetAll(ctx, key).Result()
		n = len(e.Hash)
	case "zset":
		var v []redis.Z
		v, err = c.ZRangeWithScores(ctx, key, 0, -1).Result()
		n = len(v)
		for _, z := range v {
			m, ok := z.Member.(string)
			if !ok {
				m = fmt.Sprint(z.Member)
			}
			e.ZSet = append(e.ZSet, Member{Member: m, Score: z.Score})
		}
	case "list":
		e.List, err = c.LRange(ctx, key, 0, -1).Result()
		n = len(e.List)
	case "set":
		e.Set, err = c.SMembers(ctx, key).Result()
		n = len(e.Set)
		sort.Strings(e.Set)
	case "stream":
		e.Stream, err = readStream(ctx, c, key)
	}
	if err != nil {
		return Entry{}, false, err
	}
	if n == 0 {
		return Entry{}, false, nil
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

// readStream reads a stream's entries (XRANGE), its IDs and counters (XINFO
// STREAM), its groups (XINFO GROUPS), their pending entries (XPENDING) and
// consumers (XINFO CONSUMERS).
func readStream(ctx context.Context, c redis.Cmdable, key string) (*Stream, error) {
	d, ok := c.(doer)
	if !ok {
		return nil, fmt.Errorf("reading stream %q needs a client with Do (a *redis.Client, Ring, ClusterClient or Conn), not a %T", key, c)
	}
	raw, err := d.Do(ctx, "xrange", key, "-", "+").Slice()
	if err != nil {
		return nil, err
	}
	info, err := c.XInfoStream(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	st := &Stream{
		LastID:          info.LastGeneratedID,
		EntriesAdded:    info.EntriesAdded,
		MaxDeletedID:    info.MaxDeletedEntryID,
		RecordedFirstID: info.RecordedFirstEntryID,
	}
	for _, m := range raw {
		e, err := rawStreamEntry(m)
		if err != nil {
			return nil, err
		}
		st.Entries = append(st.Entries, e)
	}
	groups, err := c.XInfoGroups(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		sg := StreamGroup{Name: g.Name, LastDeliveredID: g.LastDeliveredID, EntriesRead: g.EntriesRead}
		if g.EntriesRead == 0 {
			// go-redis reads a nil entries-read as 0; ask again, raw.
			raw, err := d.Do(ctx, "xinfo", "groups", key).Slice()
			if err != nil {
				return nil, err
			}
			sg.EntriesRead = rawEntriesRead(raw, g.Name)
		}
		pending, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: g.Name, Start: "-", End: "+", Count: math.MaxInt32}).Result()
		if err != nil {
			return nil, err
		}
		for _, p := range pending {
			sg.Pending = append(sg.Pending, StreamPending{ID: p.ID, Consumer: p.Consumer, Deliveries: p.RetryCount})
		}
		consumers, err := c.XInfoConsumers(ctx, key, g.Name).Result()
		if err != nil {
			return nil, err
		}
		for _, cons := range consumers {
			sg.Consumers = append(sg.Consumers, cons.Name)
		}
		sort.Strings(sg.Consumers)
		st.Groups = append(st.Groups, sg)
	}
	return st, nil
}

type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// rawStreamEntry reads one entry of a raw XRANGE reply: [id, [field, value, ...]].
func rawStreamEntry(v any) (StreamEntry, error) {
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return StreamEntry{}, fmt.Errorf("unexpected XRANGE entry %#v", v)
	}
	id, _ := pair[0].(string)
	fields, _ := pair[1].([]any)
	e := StreamEntry{ID: id}
	for _, f := range fields {
		s, ok := f.(string)
		if !ok {
			return StreamEntry{}, fmt.Errorf("unexpected XRANGE field %#v", f)
		}
		e.Fields = append(e.Fields, s)
	}
	return e, nil
}

// rawMap reads a RESP2 flat array of pairs or a RESP3 map.
func rawMap(v any) map[string]any {
	m := map[string]any{}
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			if k, ok := v[i].(string); ok {
				m[k] = v[i+1]
			}
		}
	case map[any]any:
		for k, x := range v {
			if k, ok := k.(string); ok {
				m[k] = x
			}
		}
	}
	return m
}

// rawEntriesRead finds a group's entries-read in a raw XINFO GROUPS reply,
// -1 when it is nil.
func rawEntriesRead(raw []any, group string) int64 {
	for _, g := range raw {
		m := rawMap(g)
		if m["name"] != group {
			continue
		}
		if n, ok := m["entries-read"].(int64); ok {
			return n
		}
		return -1
	}
	return -1
}
