package legacystub

import (
	"context"
	"errors"
	"fmt"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// Namespace matches every key of the stub: the han:legacy: prefix api_backend's
// ACL grants only while DB2 is alive (keyspec.yaml, CONTRADICTION 4).
const Namespace = "han:legacy:*"

// ErrKeysRemain: every sweep of the cutover still found stub keys, so something
// keeps writing them (a stub instance that was not stopped).
var ErrKeysRemain = errors.New("legacystub: stub keys remain after the cutover")

// Keyspace is what Cutover needs of a DB2 client: SCAN and UNLINK, the only
// commands it sends. *redis.Client has both.
type Keyspace interface {
	Scan(ctx context.Context, cursor uint64, match string, count int64) *redis.ScanCmd
	Unlink(ctx context.Context, keys ...string) *redis.IntCmd
}

// CutoverOptions bound the cutover's work per command.
type CutoverOptions struct {
	// Batch is the SCAN COUNT hint and the most keys one UNLINK names, 1..1000;
	// zero means 100.
	Batch int
	// MaxSweeps is how many full SCAN passes to make before giving up, 2..100; zero
	// means 5. The cutover ends after the first pass that finds no key.
	MaxSweeps int
}

// CutoverReport says what the cutover did.
type CutoverReport struct {
	Deleted int64 // keys removed
	Sweeps  int   // full SCAN passes; the last one found no key
}

// Cutover stops stub (when not nil) and waits for its calls in flight (see
// Stub.Close; it fails when ctx ends first), then deletes every key of Namespace
// from db2, the client of VM1 DB2, in bounded batches: SCAN MATCH han:legacy:*
// COUNT Batch, UNLINK of at most Batch keys, until a full pass finds nothing. It
// never touches a key outside Namespace. It fails with ErrKeysRemain when
// MaxSweeps passes all found keys.
func Cutover(ctx context.Context, stub *Stub, db2 Keyspace, o CutoverOptions) (CutoverReport, error) {
	var rep CutoverReport
	if o.Batch == 0 {
		o.Batch = 100
	}
	if o.MaxSweeps == 0 {
		o.MaxSweeps = 5
	}
	if o.Batch < 1 || o.Batch > 1000 {
		return rep, fmt.Errorf("legacystub: cutover: Batch %d: want 1..1000", o.Batch)
	}
	if o.MaxSweeps < 2 || o.MaxSweeps > 100 {
		return rep, fmt.Errorf("legacystub: cutover: MaxSweeps %d: want 2..100", o.MaxSweeps)
	}
	if db2 == nil {
		return rep, errors.New("legacystub: cutover: nil DB2 client")
	}
	if sc, ok := db2.(redis.Scripter); ok {
		if err := runtime.CheckDB(sc, vm1.DB2); err != nil {
			return rep, fmt.Errorf("legacystub: cutover: %w", err)
		}
	}
	if stub != nil {
		// A barrier: no call of the stub can write after this, so the sweeps
		// below see every key it made.
		if err := stub.Close(ctx); err != nil {
			return rep, fmt.Errorf("legacystub: cutover: %w", err)
		}
	}
	for rep.Sweeps < o.MaxSweeps {
		rep.Sweeps++
		found, err := sweep(ctx, db2, o.Batch, &rep.Deleted)
		if err != nil {
			return rep, err
		}
		if found == 0 {
			return rep, nil
		}
	}
	return rep, fmt.Errorf("legacystub: cutover: %d sweeps all found keys: %w", rep.Sweeps, ErrKeysRemain)
}

// sweep is one full SCAN pass that unlinks what it finds; it returns how many
// keys it found.
func sweep(ctx context.Context, db2 Keyspace, batch int, deleted *int64) (int, error) {
	found := 0
	var cursor uint64
	for {
		keys, next, err := db2.Scan(ctx, cursor, Namespace, int64(batch)).Result()
		if err != nil {
			return found, fmt.Errorf("legacystub: cutover: SCAN: %w", err)
		}
		found += len(keys)
		for len(keys) > 0 {
			n := min(len(keys), batch)
			d, err := db2.Unlink(ctx, keys[:n]...).Result()
			if err != nil {
				return found, fmt.Errorf("legacystub: cutover: UNLINK: %w", err)
			}
			*deleted += d
			keys = keys[n:]
		}
		if next == 0 {
			return found, nil
		}
		cursor = next
	}
}
