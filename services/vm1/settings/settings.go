// Package settings keeps typed settings snapshots in VM1 DB1 under
// han:settings:snapshot:{version} for 5 minutes (seed 000 §6), MessagePack
// encoded and at most vm1.SettingsSnapshotMaxBytes long.
//
// api_backend reaches this prefix through its own ACL grant of
// han:settings:snapshot:* (keyspec.yaml, CONTRADICTION 1). A snapshot is a cache
// of the settings the refresher (under the settings-refresh lock of package
// coord) read from their source of truth; a miss means "read the source again".
package settings

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/hanchat/luagen/generated/vm1"
	"github.com/hanchat/luagen/services/msgpackcheck"
	"github.com/vmihailenco/msgpack/v5"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotFound: no snapshot of that version (never stored, or expired).
	ErrNotFound = errors.New("settings: snapshot not found")
	// ErrCorrupt: the stored value does not decode into the snapshot type.
	ErrCorrupt = errors.New("settings: stored snapshot does not decode")
	// ErrTooLarge: the encoded snapshot is above vm1.SettingsSnapshotMaxBytes.
	ErrTooLarge = errors.New("settings: snapshot too large")
)

// MaxBytes bounds an encoded snapshot (keyspec.yaml settings_snapshot.max_bytes).
const MaxBytes = vm1.SettingsSnapshotMaxBytes

// Store reads and writes snapshots of type T through vm1's generated scripts
// (DB1). It is safe for concurrent use.
type Store[T any] struct {
	scripts *vm1.Scripts
}

// New returns a Store on scripts, which need a DB1 client (without one, every
// call fails with runtime.ErrNoClient).
func New[T any](scripts *vm1.Scripts) *Store[T] {
	return &Store[T]{scripts: cmp.Or(scripts, &vm1.Scripts{})}
}

// Put stores v as the snapshot of version (1..2^53-1) for 5 minutes, replacing
// any snapshot of that version and restarting its TTL. Nothing is written when v
// does not encode or is too large.
func (s *Store[T]) Put(ctx context.Context, version int64, v T) error {
	key, err := vm1.NewSettingsSnapshotKey(version)
	if err != nil {
		return fmt.Errorf("settings: put: %w", err)
	}
	b, err := Encode(v)
	if err != nil {
		return fmt.Errorf("settings: put: %w", err)
	}
	if _, err := s.scripts.SettingsSnapshotPut(ctx, key, vm1.SettingsSnapshotPutArgs{Value: b}); err != nil {
		return fmt.Errorf("settings: put: %w", err)
	}
	return nil
}

// Get reads the snapshot of version. It fails with ErrNotFound when there is none
// and with ErrCorrupt when the stored value does not decode into T.
func (s *Store[T]) Get(ctx context.Context, version int64) (T, error) {
	var zero T
	key, err := vm1.NewSettingsSnapshotKey(version)
	if err != nil {
		return zero, fmt.Errorf("settings: get: %w", err)
	}
	r, err := s.scripts.SettingsSnapshotGet(ctx, key)
	if err != nil {
		return zero, fmt.Errorf("settings: get: %w", err)
	}
	if !r.Found {
		return zero, ErrNotFound
	}
	v, err := Decode[T](r.Value)
	if err != nil {
		return zero, fmt.Errorf("settings: get: %w", err)
	}
	return v, nil
}

// Encode is the stored form of a snapshot: its MessagePack encoding, refused
// (ErrTooLarge) above MaxBytes.
func Encode[T any](v T) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%d bytes, the limit is %d: %w", len(b), MaxBytes, ErrTooLarge)
	}
	return b, nil
}

// Decode reads a stored snapshot. Anything but exactly one MessagePack value that
// decodes into T, at most MaxBytes long, is ErrCorrupt; it never panics. Fields
// T does not have are ignored, so a newer writer's snapshot still reads.
func Decode[T any](b []byte) (v T, err error) {
	var zero T
	// The decoder allocates what a length header claims: check first that b is
	// one value, within the limit, whose every length fits in b. Decoding it
	// then reads all of b.
	if err := msgpackcheck.Check(b, MaxBytes); err != nil {
		return zero, fmt.Errorf("decode %T: %w: %w", zero, ErrCorrupt, err)
	}
	defer func() {
		if p := recover(); p != nil {
			v, err = zero, fmt.Errorf("decoding %T failed: %w", zero, ErrCorrupt)
		}
	}()
	if err := msgpack.Unmarshal(b, &v); err != nil {
		return zero, fmt.Errorf("decode %T: %v: %w", zero, err, ErrCorrupt)
	}
	return v, nil
}
