package serverconf_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/serverconf"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The TLS options are validated like the aclfile: a key without a certificate,
// a relative path or a newline is refused before anything is written.
func TestTLSOptionsAreValidated(t *testing.T) {
	base := serverconf.DefaultOptions
	for name, o := range map[string]serverconf.Options{
		"key without cert":  withTLS(base, "", "/etc/redis/tls/server.key", ""),
		"ca without cert":   withTLS(base, "", "", "/etc/redis/tls/ca.crt"),
		"cert without key":  withTLS(base, "/etc/redis/tls/server.crt", "", "/etc/redis/tls/ca.crt"),
		"cert without ca":   withTLS(base, "/etc/redis/tls/server.crt", "/etc/redis/tls/server.key", ""),
		"relative cert":     withTLS(base, "tls/server.crt", "/etc/redis/tls/server.key", "/etc/redis/tls/ca.crt"),
		"newline in key":    withTLS(base, "/etc/redis/tls/server.crt", "/etc/redis/tls/server.key\nbind 0.0.0.0", "/etc/redis/tls/ca.crt"),
		"unclean ca":        withTLS(base, "/etc/redis/tls/server.crt", "/etc/redis/tls/server.key", "/etc/redis/../ca.crt"),
		"space in cert":     withTLS(base, "/etc/redis/tls/server 1.crt", "/etc/redis/tls/server.key", "/etc/redis/tls/ca.crt"),
		"quote in cert":     withTLS(base, `/etc/redis/tls/"server.crt`, "/etc/redis/tls/server.key", "/etc/redis/tls/ca.crt"),
		"control in ca":     withTLS(base, "/etc/redis/tls/server.crt", "/etc/redis/tls/server.key", "/etc/redis/tls/ca\x01.crt"),
		"bidi in cert path": withTLS(base, "/etc/redis/tls/server\u202e.crt", "/etc/redis/tls/server.key", "/etc/redis/tls/ca.crt"),
	} {
		if err := o.Validate(); !errors.Is(err, serverconf.ErrBadOption) {
			t.Errorf("%s: Validate = %v, want ErrBadOption", name, err)
		}
	}
	authWithoutCert := base
	authWithoutCert.TLSAuthClients = true
	if err := authWithoutCert.Validate(); !errors.Is(err, serverconf.ErrBadOption) {
		t.Errorf("tls-auth-clients without a certificate: Validate = %v, want ErrBadOption", err)
	}
	if err := withTLS(base, "/etc/redis/tls/server.crt", "/etc/redis/tls/server.key", "/etc/redis/tls/ca.crt").Validate(); err != nil {
		t.Errorf("valid TLS options refused: %v", err)
	}
}

func withTLS(o serverconf.Options, cert, key, ca string) serverconf.Options {
	o.TLSCertFile, o.TLSKeyFile, o.TLSCAFile = cert, key, ca
	return o
}

// A server started from the generated config with the TLS options speaks TLS
// only: a client that trusts the CA connects, a plaintext client gets nothing;
// with a CA for clients, a client without a certificate of that CA is refused.
func TestGeneratedTLSConfigOnARealServer(t *testing.T) {
	redistest.Need(t)
	spec := withServer(t)
	pki := newPKI(t)
	for _, mutual := range []bool{false, true} {
		t.Run("mutual="+strconv.FormatBool(mutual), func(t *testing.T) {
			dir := t.TempDir()
			o := serverconf.Options{Bind: "127.0.0.1", Port: freePort(t), ACLFile: filepath.Join(dir, "users.acl"),
				TLSCertFile: pki.serverCert, TLSKeyFile: pki.serverKey, TLSCAFile: pki.caCert, TLSAuthClients: mutual}
			conf, err := serverconf.Render(spec, spec.Instance("a"), o)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"\nport 0\n", "\ntls-port " + strconv.Itoa(o.Port) + "\n", "\ntls-cert-file " + pki.serverCert + "\n"} {
				if !strings.Contains(conf, want) {
					t.Fatalf("config lacks %q:\n%s", want, conf)
				}
			}
			const password = "a-test-password-of-32-characters"
			if err := os.WriteFile(o.ACLFile, []byte("user default off\nuser app on >"+password+" ~* &* +@all\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			startServer(t, dir, conf)

			ctx := context.Background()
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port))
			withCert := &tls.Config{RootCAs: pki.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pki.client}}
			noCert := &tls.Config{RootCAs: pki.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
			ping := func(cfg *tls.Config) error {
				c := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: password, TLSConfig: cfg,
					DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
				defer c.Close()
				return c.Ping(ctx).Err()
			}
			if !redistest.WaitFor(ctx, 10*time.Second, func() bool { return ping(withCert) == nil }) {
				t.Fatalf("a TLS client with the CA never connected: %v", ping(withCert))
			}
			if err := ping(nil); err == nil {
				t.Fatal("a plaintext client got an answer on the TLS port")
			}
			err = ping(noCert)
			if mutual && err == nil {
				t.Fatal("mutual TLS: a client without a certificate connected")
			}
			if !mutual && err != nil {
				t.Fatalf("a client without a certificate was refused although the config does not ask for one: %v", err)
			}
			untrusting := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pki.client}}
			if err := ping(untrusting); err == nil {
				t.Fatal("a client that does not trust the CA connected")
			}
		})
	}
}

// startServer runs redis-server with conf (the generated fragment plus the
// test's directory and log) until the test ends.
func startServer(t *testing.T, dir, conf string) {
	t.Helper()
	path := filepath.Join(dir, "redis.conf")
	full := conf + "\ndaemonize no\ndir " + dir + "\nlogfile " + filepath.Join(dir, "redis.log") + "\nappendonly no\nsave \"\"\n"
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", path)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	ready := redistest.WaitFor(context.Background(), 10*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
		}
		b, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		return strings.Contains(string(b), "Ready to accept connections")
	})
	select {
	case <-done:
		b, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		t.Fatalf("redis-server exited:\n%s", b)
	default:
	}
	if !ready {
		t.Fatal("redis-server did not become ready")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// pki is a CA, a server certificate for 127.0.0.1 and a client certificate,
// written to files the server reads.
type pki struct {
	caCert, serverCert, serverKey string
	pool                          *x509.CertPool
	client                        tls.Certificate
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "luagen test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "luagen test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: ips,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	srvDER, srvKey := issue(2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	cliDER, cliKey := issue(3, x509.ExtKeyUsageClientAuth, nil)
	p := pki{
		caCert:     write("ca.crt", "CERTIFICATE", caDER),
		serverCert: write("server.crt", "CERTIFICATE", srvDER),
		serverKey:  write("server.key", "EC PRIVATE KEY", keyDER(srvKey)),
		pool:       x509.NewCertPool(),
		client:     tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey},
	}
	p.pool.AddCert(ca)
	return p
}
