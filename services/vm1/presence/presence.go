// Package presence tracks HAN Chat's realtime connections in VM1 DB1 (seed 000
// §5): a hash han:rt:conn:{connection_id} (user_id, instance, last_seen,
// subscriptions_count; 90 s) and the user's sorted set
// han:rt:user:{user_id}:connections (connection_id -> last heartbeat in ms; 120 s),
// both refreshed atomically by every heartbeat.
//
// A connection is live while its hash exists: up to 90 s after its last
// heartbeat. Connections lists live ones only; Cleanup removes the set members of
// dead ones in bounded batches. Presence is a hint for fan-out, never the truth
// about who may see what.
package presence

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/runtime/keypart"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrWrongUser: the connection id belongs to another user's connection.
	ErrWrongUser = errors.New("presence: the connection belongs to another user")
)

// Limits of the scripts' arguments (keyspec.yaml).
const (
	MaxSubscriptions = 100000 // subscriptions_count
	MaxBatch         = 1000   // Cleanup's batch and Connections' limit
)

// Presence records connections of one service instance through vm1's generated
// scripts (DB1). It is safe for concurrent use.
type Presence struct {
	scripts  *vm1.Scripts
	instance string
}

// New returns a Presence for the service instance named instance (1..64
// characters of [A-Za-z0-9._-], validated), recorded in each connection it
// makes; scripts need a DB1 client (without one, every call fails with
// runtime.ErrNoClient).
func New(scripts *vm1.Scripts, instance string) (*Presence, error) {
	if scripts == nil {
		scripts = &vm1.Scripts{}
	}
	if !keypart.Name(instance, 64) {
		return nil, errors.New("presence: New: instance: want 1..64 characters of [A-Za-z0-9._-]")
	}
	return &Presence{scripts: scripts, instance: instance}, nil
}

// Connection is one realtime connection of a user.
type Connection struct {
	ID     string // connection UUID
	UserID string // user UUID

	conn vm1.RTConnKey
	set  vm1.RTUserConnectionsKey
}

func newConnection(id, userID string) (Connection, error) {
	conn, err := vm1.NewRTConnKey(id)
	if err != nil {
		return Connection{}, err
	}
	set, err := vm1.NewRTUserConnectionsKey(userID)
	if err != nil {
		return Connection{}, err
	}
	return Connection{ID: id, UserID: userID, conn: conn, set: set}, nil
}

// Status is the state of a connection after a heartbeat.
type Status struct {
	// Revived is true when the heartbeat found no record of the connection: its
	// previous heartbeats were more than 90 s ago (or it was disconnected), so
	// others saw it offline meanwhile.
	Revived bool
	// Connections is how many members the user's set holds now, dead ones not
	// yet cleaned up included.
	Connections int64
}

// Connect records a new connection of userID with a fresh random connection id.
func (p *Presence) Connect(ctx context.Context, userID string, subscriptions int) (Connection, Status, error) {
	id, err := newUUID()
	if err != nil {
		return Connection{}, Status{}, err
	}
	c, err := newConnection(id, userID)
	if err != nil {
		return Connection{}, Status{}, fmt.Errorf("presence: connect: %w", err)
	}
	st, err := p.heartbeat(ctx, c, subscriptions)
	if err != nil {
		return Connection{}, Status{}, fmt.Errorf("presence: connect: %w", err)
	}
	return c, Status{Connections: st.Connections}, nil
}

// Resume is the Connection of an id and user the caller kept (e.g. across a
// process boundary); it checks their format only.
func Resume(connectionID, userID string) (Connection, error) {
	c, err := newConnection(connectionID, userID)
	if err != nil {
		return Connection{}, fmt.Errorf("presence: resume: %w", err)
	}
	return c, nil
}

// Heartbeat refreshes the connection and its member in the user's set for
// another 90 s and 120 s, and records its current subscription count.
func (p *Presence) Heartbeat(ctx context.Context, c Connection, subscriptions int) (Status, error) {
	if c.conn.String() == "" {
		return Status{}, errors.New("presence: heartbeat: empty Connection (use Connect or Resume)")
	}
	st, err := p.heartbeat(ctx, c, subscriptions)
	if err != nil {
		return Status{}, fmt.Errorf("presence: heartbeat: %w", err)
	}
	return st, nil
}

func (p *Presence) heartbeat(ctx context.Context, c Connection, subscriptions int) (Status, error) {
	if subscriptions < 0 || subscriptions > MaxSubscriptions {
		return Status{}, fmt.Errorf("subscriptions %d: want 0..%d", subscriptions, MaxSubscriptions)
	}
	r, err := p.scripts.RTHeartbeat(ctx, c.conn, c.set, vm1.RTHeartbeatArgs{
		ConnectionID: c.ID, UserID: c.UserID, Instance: p.instance, Subscriptions: int64(subscriptions),
	})
	if errors.Is(err, vm1.ErrWrongUser) {
		return Status{}, fmt.Errorf("%w (%w)", ErrWrongUser, err)
	}
	if err != nil {
		return Status{}, err
	}
	return Status{Revived: r.Created, Connections: r.Connections}, nil
}

// Disconnected is the outcome of a disconnect.
type Disconnected struct {
	// Duplicate is true when there was nothing left to remove: the connection
	// was disconnected before, or expired and was cleaned up. It is harmless.
	Duplicate bool
	// Remaining is how many members the user's set still holds.
	Remaining int64
}

// Disconnect removes the connection and its member in the user's set. A
// duplicate disconnect changes nothing and reports Duplicate.
func (p *Presence) Disconnect(ctx context.Context, c Connection) (Disconnected, error) {
	if c.conn.String() == "" {
		return Disconnected{}, errors.New("presence: disconnect: empty Connection (use Connect or Resume)")
	}
	r, err := p.scripts.RTDisconnect(ctx, c.conn, c.set, vm1.RTDisconnectArgs{ConnectionID: c.ID, UserID: c.UserID})
	if errors.Is(err, vm1.ErrWrongUser) {
		return Disconnected{}, fmt.Errorf("presence: disconnect: %w (%w)", ErrWrongUser, err)
	}
	if err != nil {
		return Disconnected{}, fmt.Errorf("presence: disconnect: %w", err)
	}
	return Disconnected{Duplicate: !r.Removed, Remaining: r.Connections}, nil
}

// Connections lists at most limit (1..MaxBatch) live connection ids of userID,
// oldest heartbeat first.
func (p *Presence) Connections(ctx context.Context, userID string, limit int) ([]string, error) {
	set, err := vm1.NewRTUserConnectionsKey(userID)
	if err != nil {
		return nil, fmt.Errorf("presence: connections: %w", err)
	}
	if limit < 1 || limit > MaxBatch {
		return nil, fmt.Errorf("presence: connections: limit %d: want 1..%d", limit, MaxBatch)
	}
	ids, err := p.scripts.RTConnections(ctx, set, vm1.RTConnectionsArgs{Limit: int64(limit)})
	if err != nil {
		return nil, fmt.Errorf("presence: connections: %w", err)
	}
	return ids, nil
}

// Cleaned is the outcome of one cleanup batch.
type Cleaned struct {
	Removed int64 // dead members removed
	More    bool  // dead members remain: call again
}

// Cleanup removes at most batch (1..MaxBatch) members of userID's set whose
// connection is dead (last heartbeat more than 90 s ago). It never reads more of
// the set than batch members; More says whether to call again.
func (p *Presence) Cleanup(ctx context.Context, userID string, batch int) (Cleaned, error) {
	set, err := vm1.NewRTUserConnectionsKey(userID)
	if err != nil {
		return Cleaned{}, fmt.Errorf("presence: cleanup: %w", err)
	}
	if batch < 1 || batch > MaxBatch {
		return Cleaned{}, fmt.Errorf("presence: cleanup: batch %d: want 1..%d", batch, MaxBatch)
	}
	r, err := p.scripts.RTCleanup(ctx, set, vm1.RTCleanupArgs{Batch: int64(batch)})
	if err != nil {
		return Cleaned{}, fmt.Errorf("presence: cleanup: %w", err)
	}
	return Cleaned{Removed: r.Removed, More: r.More}, nil
}

// newUUID is a random (version 4) UUID in canonical lower-case form.
func newUUID() (string, error) {
	u, err := uuid.NewRandom()
	if err != nil {
		return "", fmt.Errorf("presence: connection id: %w", err)
	}
	return u.String(), nil
}
