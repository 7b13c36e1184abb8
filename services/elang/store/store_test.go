package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/generated/elang"
	"github.com/hanchat/luagen/services/elang/store"
	"github.com/redis/go-redis/v9"
)

const helperEnv = "ELANG_STORE_TEST_HELPER"

func prefix(t *testing.T) elang.Prefix {
	p, err := elang.NewPrefix("store:")
	if err == nil {
		p, err = p.Test()
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Without a redis URL the store is the local directory; a directory others may
// enter is refused; entries are files only the owner reads.
func TestOpenChoosesTheStore(t *testing.T) {
	ctx := context.Background()
	p := prefix(t)
	dir := filepath.Join(t.TempDir(), "private")
	st, err := store.Open("", dir, p)
	if err != nil || !st.Local() || st.Kind() != "local" {
		t.Fatalf("Open without a URL: %v %v", st, err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("the local directory has mode %v", fi.Mode().Perm())
	}
	if err := st.Set(ctx, "catalog.version", []byte("4"), time.Minute); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", path, fi.Mode().Perm())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := store.NewLocal(open, p); !errors.Is(err, store.ErrNotPrivate) {
		t.Fatalf("a 0755 directory: %v", err)
	}
	if _, err := store.Open("", "", p); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("neither a URL nor a directory: %v", err)
	}

	// A URL: Redis (nothing is dialled until a call); its password never shows.
	st, err = store.Open("redis://elang_app:s3cret-pw@127.0.0.1:1/0", dir, p)
	if err != nil || st.Local() {
		t.Fatalf("Open with a URL: %v %v", st, err)
	}
	for _, bad := range []string{"redis://elang_app:s3cret-pw@127.0.0.1:1/3", "redis://elang_app:s3cret-pw@127.0.0.1:1/x"} {
		_, err := store.Open(bad, dir, p)
		if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
			t.Fatalf("Open(%s): %v", strings.ReplaceAll(bad, "s3cret-pw", "***"), err)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := store.NewRedis(c, p); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a client without ContextTimeoutEnabled: %v", err)
	}
	if _, err := store.NewLocal(dir, elang.Prefix{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("the zero prefix: %v", err)
	}
}

// Two processes of one host share the local store: an entry one writes the
// other reads, and a lock one holds the other cannot take until it is
// released. (Processes of other hosts share nothing: that is the documented
// limit of the fallback.)
func TestLocalStoreIsSharedByProcessesOfOneHost(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.NewLocal(dir, prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "held" {
		t.Fatalf("helper said %q", lines.Text())
	}
	if v, ok, err := st.Get(ctx, "written.by.helper"); err != nil || !ok || string(v) != "hello" {
		t.Fatalf("the other process's entry: %q %v %v", v, ok, err)
	}
	if ok, left, err := st.Acquire(ctx, "report:42", "owner-parent-0000000000", time.Minute); err != nil || ok || left <= 0 {
		t.Fatalf("took the other process's lock: %v %v %v", ok, left, err)
	}
	_ = stdin.Close() // the helper releases and exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if ok, _, err := st.Acquire(ctx, "report:42", "owner-parent-0000000000", time.Minute); err != nil || !ok {
		t.Fatalf("after the other process released: %v %v", ok, err)
	}
}

// TestMain runs the other process of TestLocalStoreIsSharedByProcessesOfOneHost
// when the test binary is started as that process, and the tests otherwise.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if err := helperProcess(dir); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperProcess is the other process of TestLocalStoreIsSharedByProcessesOfOneHost:
// it writes an entry, holds a lock until its parent closes stdin, then releases it.
func helperProcess(dir string) error {
	ctx := context.Background()
	p, err := elang.NewPrefix("store:")
	if err == nil {
		p, err = p.Test()
	}
	if err != nil {
		return err
	}
	st, err := store.NewLocal(dir, p)
	if err != nil {
		return err
	}
	if err := st.Set(ctx, "written.by.helper", []byte("hello"), time.Minute); err != nil {
		return err
	}
	if ok, _, err := st.Acquire(ctx, "report:42", "owner-helper-0000000000", time.Minute); err != nil || !ok {
		return fmt.Errorf("acquire: %v %v", ok, err)
	}
	os.Stdout.WriteString("held\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	if out, err := st.Release(ctx, "report:42", "owner-helper-0000000000"); err != nil || out != elang.LockOutcomeOk {
		return fmt.Errorf("release: %v %v", out, err)
	}
	return nil
}
