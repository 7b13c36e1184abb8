package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanchat/luagen/generated/elang"
)

// ErrNotPrivate: the local store's directory is open to other users.
var ErrNotPrivate = errors.New("store: the local directory is not private")

// NewLocal is the store in the private directory dir on this host (made with
// mode 0700 when missing; refused with ErrNotPrivate when group or others may
// enter it). One host only: see the package comment. Entries and locks of
// prefix p live in a subdirectory named by p's hex, so another prefix's store
// in the same directory never sees them.
func NewLocal(dir string, p elang.Prefix) (*Store, error) {
	if p.String() == "" {
		return nil, fmt.Errorf("store: %w: the zero deployment prefix", ErrInvalid)
	}
	if dir == "" {
		return nil, fmt.Errorf("store: %w: no directory for the local store (and no redis URL)", ErrInvalid)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: local directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("store: local directory: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v, want 0700 (it holds the application's cache and locks)", ErrNotPrivate, dir, fi.Mode().Perm())
	}
	root := filepath.Join(dir, hex.EncodeToString([]byte(p.String())))
	l := &localStore{root: root, now: time.Now}
	for _, d := range []string{l.cacheDir(), l.lockDir(), l.tmpDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("store: local directory: %w", err)
		}
	}
	return &Store{prefix: p, local: true, b: l}, nil
}

// localStore keeps each entry in a file of its own: an 8-byte deadline (Unix
// ms, big-endian) and the value (or a lock's owner). Files are written whole to
// a temporary file and renamed into place, so a reader sees the old or the new
// entry, never a part. Lock operations read, compare and write under an
// exclusive flock(2) of one file, which serializes them among the processes
// of this host.
type localStore struct {
	root string
	now  func() time.Time
}

func (l *localStore) cacheDir() string { return filepath.Join(l.root, "cache") }
func (l *localStore) lockDir() string  { return filepath.Join(l.root, "lock") }
func (l *localStore) tmpDir() string   { return filepath.Join(l.root, "tmp") }

func (l *localStore) cachePath(name string) string {
	return filepath.Join(l.cacheDir(), hex.EncodeToString([]byte(name)))
}

func (l *localStore) lockPath(name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(l.lockDir(), hex.EncodeToString(sum[:]))
}

// read is the entry at path and its deadline; ok is false when there is none,
// it expired (the clock is past its deadline, as Redis expires keys) or it is
// not a whole entry.
func (l *localStore) read(path string) (payload []byte, deadline int64, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	if len(b) < 8 {
		return nil, 0, false, nil
	}
	deadline = int64(binary.BigEndian.Uint64(b[:8]))
	if l.now().UnixMilli() > deadline {
		return nil, deadline, false, nil
	}
	return b[8:], deadline, true, nil
}

func (l *localStore) write(path string, payload []byte, ttl time.Duration) error {
	f, err := os.CreateTemp(l.tmpDir(), "entry-*")
	if err != nil {
		return err
	}
	var head [8]byte
	binary.BigEndian.PutUint64(head[:], uint64(l.now().Add(ttl).UnixMilli()))
	_, err = f.Write(append(head[:], payload...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

func (l *localStore) get(_ context.Context, name string) ([]byte, bool, error) {
	v, _, ok, err := l.read(l.cachePath(name))
	return v, ok, err
}

func (l *localStore) set(_ context.Context, name string, value []byte, ttl time.Duration) error {
	return l.write(l.cachePath(name), value, ttl)
}

func (l *localStore) del(_ context.Context, name string) (bool, error) {
	path := l.cachePath(name)
	_, _, live, err := l.read(path)
	if err != nil {
		return false, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return live, nil
}

// clearBatch removes up to batch entry files; the cursor is only "more"
// (1) or "done" (0), since removed files leave the listing.
func (l *localStore) clearBatch(_ context.Context, _ uint64, batch int) (uint64, int, error) {
	d, err := os.Open(l.cacheDir())
	if err != nil {
		return 0, 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(batch)
	if errors.Is(err, io.EOF) {
		return 0, 0, nil // nothing left
	}
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, name := range names {
		if err := os.Remove(filepath.Join(l.cacheDir(), name)); err == nil {
			n++
		} else if !errors.Is(err, fs.ErrNotExist) {
			return 1, n, err
		}
	}
	if len(names) < batch {
		return 0, n, nil
	}
	return 1, n, nil
}

// locked runs f under the exclusive flock of the lock directory.
func (l *localStore) locked(f func() error) error {
	fd, err := os.OpenFile(filepath.Join(l.root, "lock.flock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer fd.Close()
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(fd.Fd()), syscall.LOCK_UN) }()
	return f()
}

func (l *localStore) acquire(_ context.Context, name, owner string, lease time.Duration) (acquired bool, left time.Duration, err error) {
	path := l.lockPath(name)
	err = l.locked(func() error {
		holder, deadline, live, err := l.read(path)
		if err != nil {
			return err
		}
		if live && string(holder) != owner {
			left = time.Duration(deadline-l.now().UnixMilli()) * time.Millisecond
			return nil
		}
		acquired, left = true, lease
		return l.write(path, []byte(owner), lease)
	})
	return acquired, left, err
}

func (l *localStore) refresh(_ context.Context, name, owner string, lease time.Duration) (Outcome, error) {
	return l.asOwner(name, owner, func(path string, holder []byte) error { return l.write(path, holder, lease) })
}

func (l *localStore) release(_ context.Context, name, owner string) (Outcome, error) {
	return l.asOwner(name, owner, func(path string, _ []byte) error {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// asOwner runs act on lock name's file under the store's file lock when owner
// holds the lock and it is live, as the Lua scripts do on Redis: Expired when
// no live lock is there, OtherOwner when someone else holds it.
func (l *localStore) asOwner(name, owner string, act func(path string, holder []byte) error) (out Outcome, err error) {
	path := l.lockPath(name)
	err = l.locked(func() error {
		holder, _, live, err := l.read(path)
		switch {
		case err != nil:
			return err
		case !live:
			out = elang.LockOutcomeExpired
		case string(holder) != owner:
			out = elang.LockOutcomeOtherOwner
		default:
			out = elang.LockOutcomeOk
			return act(path, holder)
		}
		return nil
	})
	return out, err
}
