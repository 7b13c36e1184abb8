// Package elangtest is what the Elang services' tests share: fresh test
// deployment prefixes, and the two stores of services/elang/store (a real
// redis-server the test starts, a private temporary directory) so one test
// table runs on both.
package elangtest

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/services/elang/store"
	"github.com/redis/go-redis/v9"
)

// Prefix is a fresh test deployment prefix: "test:<name>-<8 hex>:".
func Prefix(t testing.TB, name string) elang.Prefix {
	t.Helper()
	tp, err := Deployment(t, name).Test()
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// Deployment is a fresh deployment prefix, "<name>-<8 hex>:", for a test that
// needs the aclfile of one deployment (luagen acl --prefix refuses test
// prefixes, which no deployment may use) on a server of its own.
func Deployment(t testing.TB, name string) elang.Prefix {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	p, err := elang.NewPrefix(name + "-" + hex.EncodeToString(b[:]) + ":")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Kinds are the store kinds a table runs on.
var Kinds = []string{"redis", "local"}

// Place is where stores of one kind live in a test: one redis-server, or one
// private directory. Stores of several prefixes may share it.
type Place struct {
	Kind   string
	Server *redistest.Server // "redis" only
	Dir    string            // "local" only
	t      testing.TB
	client *redis.Client
}

// Open starts the place of kind for t (a redis-server is skipped under -short;
// the local directory never is).
func Open(t testing.TB, kind string) *Place {
	t.Helper()
	pl := &Place{Kind: kind, t: t}
	switch kind {
	case "redis":
		pl.Server = redistest.Start(t)
		pl.client = pl.Server.Client(elang.DB0, func(o *redis.Options) { o.MaxRetries = -1; o.ContextTimeoutEnabled = true })
	case "local":
		pl.Dir = filepath.Join(t.TempDir(), "elang-store")
	default:
		t.Fatalf("elangtest: no store kind %q", kind)
	}
	return pl
}

// Client is the place's Redis client (nil for a local place).
func (pl *Place) Client() *redis.Client { return pl.client }

// Store is the store of prefix p at the place.
func (pl *Place) Store(p elang.Prefix) *store.Store {
	pl.t.Helper()
	var st *store.Store
	var err error
	if pl.Kind == "redis" {
		st, err = store.NewRedis(pl.client, p)
	} else {
		st, err = store.NewLocal(pl.Dir, p)
	}
	if err != nil {
		pl.t.Fatal(err)
	}
	return st
}
