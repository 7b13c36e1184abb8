package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// peerNet is a network namespace joined to this one by a veth pair with a
// private /30: Host is this namespace's end, Peer the namespace's.
type peerNet struct {
	NS         string
	Host, Peer netip.Addr
}

// newPeerNet makes the namespace and the veth pair under names of its own, so
// parallel runs never collide, and removes both when the test ends, whatever
// happened. It skips the test only when this environment cannot make network
// namespaces (not root, no ip binary, no permission).
func newPeerNet(t *testing.T) *peerNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root; run as root to probe the server from another address")
	}
	ipBin, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("no ip binary (iproute2) to make a network namespace and a veth pair")
	}
	run := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, ipBin, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	tag := hex.EncodeToString(id[:])
	p := &peerNet{NS: "luagen-probe-" + tag}
	hostIf, peerIf := "lg"+tag+"h", "lg"+tag+"p" // at most 15 characters
	if err := run("netns", "add", p.NS); err != nil {
		t.Skipf("cannot make a network namespace here (%v)", err)
	}
	t.Cleanup(func() {
		// Deleting the host end deletes its peer; the namespace goes last.
		_ = run("link", "del", hostIf)
		if err := run("netns", "del", p.NS); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	p.Host, p.Peer = freeSlash30(t)
	for _, args := range [][]string{
		{"link", "add", hostIf, "type", "veth", "peer", "name", peerIf},
		{"link", "set", peerIf, "netns", p.NS},
		{"addr", "add", p.Host.String() + "/30", "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"-n", p.NS, "addr", "add", p.Peer.String() + "/30", "dev", peerIf},
		{"-n", p.NS, "link", "set", peerIf, "up"},
		{"-n", p.NS, "link", "set", "lo", "up"},
	} {
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// freeSlash30 picks a /30 in 10.213.0.0/16 that no interface of this host uses.
func freeSlash30(t *testing.T) (host, peer netip.Addr) {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 100; attempt++ {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		base := netip.AddrFrom4([4]byte{10, 213, b[0], b[1] &^ 3})
		prefix := netip.PrefixFrom(base, 30)
		used := false
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && (prefix.Contains(ip.Unmap()) || n.Contains(base.AsSlice())) {
					used = true
				}
			}
		}
		if !used {
			return base.Next(), base.Next().Next()
		}
	}
	t.Fatal("no free /30 in 10.213.0.0/16")
	return
}

// probe runs redis-cli PING against addr from inside the namespace and returns
// what it printed.
func (p *peerNet) probe(t *testing.T, addr netip.AddrPort) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "ip", "netns", "exec", p.NS,
		"redis-cli", "-h", addr.Addr().String(), "-p", strconv.Itoa(int(addr.Port())), "PING").CombinedOutput()
	if ctx.Err() != nil {
		return "probe timed out: " + string(out)
	}
	return strings.TrimSpace(string(out))
}

// pongListener answers +PONG to whatever connects to it on addr (a control that
// shows the namespace does reach this host's end of the veth pair).
func pongListener(t *testing.T, host netip.Addr) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", netip.AddrPortFrom(host, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte("+PONG\r\n"))
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return netip.MustParseAddrPort(ln.Addr().String())
}

// A redis-server started from `luagen config --instance vm1|vm2` (the generated
// config as the CLI prints it, with the generated aclfile) answers on loopback
// and cannot be reached from another address (seed 000 §12, 004 §8): from a
// network namespace joined by a veth pair, connecting to this host's address on
// the server's port is refused, while a control listener on that same address
// answers, so the refusal is the server's binding and not a broken link.
func TestGeneratedConfigIsUnreachableFromAnotherAddress(t *testing.T) {
	p := newPeerNet(t)
	control := pongListener(t, p.Host)
	if out := p.probe(t, control); out != "PONG" {
		t.Fatalf("the namespace does not reach %s at all (%q): the probe would prove nothing", control, out)
	}
	users := map[string]string{"vm1": "api_backend", "vm2": "message_safety"}
	for _, instance := range []string{"vm1", "vm2"} {
		t.Run(instance, func(t *testing.T) {
			user := users[instance]
			pwFile := filepath.Join(t.TempDir(), user+".pw")
			const password = "reach-test-password-1b7d"
			if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			code, aclText, stderr := luagen(t, "", "acl", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua",
				"--instance", instance, "--password-file", user+"="+pwFile)
			if code != 0 {
				t.Fatalf("luagen acl: %d %s", code, stderr)
			}
			var conf string
			srv := redistest.Start(t, redistest.WithACL(aclText), redistest.WithConfigFor(func(port int, dir string) []string {
				code, out, stderr := luagen(t, "", "config", "--spec", "../../../keyspec.yaml", "--instance", instance,
					"--port", strconv.Itoa(port), "--aclfile", redistest.ACLPath(dir))
				if code != 0 {
					t.Fatalf("luagen config: %d %s", code, stderr)
				}
				conf = out
				return strings.Split(out, "\n")
			}))
			if !strings.Contains(conf, "\nbind 127.0.0.1 -::1\n") || !strings.Contains(conf, "\nprotected-mode yes\n") {
				t.Fatalf("the generated config no longer binds loopback only:\n%s", conf)
			}

			c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: user, Password: password, DB: 0})
			defer c.Close()
			if pong, err := c.Ping(context.Background()).Result(); err != nil || pong != "PONG" {
				t.Fatalf("loopback: %q %v", pong, err)
			}

			target := netip.AddrPortFrom(p.Host, uint16(srv.Port))
			out := p.probe(t, target)
			if !strings.Contains(out, "Could not connect to Redis") || !(strings.Contains(out, "Connection refused") || strings.Contains(out, "timed out")) {
				t.Fatalf("from %s, %s answered %q: the server is reachable from another address", p.Peer, target, out)
			}
			// Nothing else on this host answers there either: a direct dial to that
			// address from this namespace is refused too (the port is not bound on it).
			var opErr *net.OpError
			if conn, err := net.DialTimeout("tcp", target.String(), 2*time.Second); err == nil {
				conn.Close()
				t.Fatalf("%s accepts connections on the host's veth address", target)
			} else if !errors.As(err, &opErr) {
				t.Fatalf("dial %s: %v", target, err)
			}
		})
	}
}
