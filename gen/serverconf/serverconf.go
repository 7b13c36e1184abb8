// Package serverconf renders the hardened redis.conf fragment of an instance from
// its server section in the spec: network exposure, the aclfile, dangerous
// surfaces off, persistence and eviction with their reasons, and the questions
// the seeds leave open.
package serverconf

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/keyspec"
)

// Options are the deployment's values the spec does not hold.
type Options struct {
	Bind    string // addresses to listen on; loopback or the private interface only
	Port    int
	ACLFile string // path of the file `luagen acl` wrote
	// TLS, for traffic that crosses a trust boundary: when TLSCertFile is set,
	// the server listens with TLS only (on Port; the plaintext port is closed)
	// with this certificate and key, and TLSCAFile is the CA it trusts for
	// replicas and cluster peers (required: Redis refuses TLS replication
	// without one) and, with TLSAuthClients, for client certificates (mutual
	// TLS). All paths are absolute and clean.
	TLSCertFile    string
	TLSKeyFile     string
	TLSCAFile      string
	TLSAuthClients bool
	// ClusterConfigFile is, on a cluster instance, the file the node keeps its
	// view of the cluster in (cluster-config-file), which the node itself
	// writes: a file name in the server's working directory, or an absolute,
	// clean path; each node of one host needs its own. "": nodes-<port>.conf.
	ClusterConfigFile string
}

// ErrBadOption: an Options value that could change the config beyond its own
// directive (a control character starts a directive of its own), or that the
// server would read otherwise than meant.
var ErrBadOption = errors.New("invalid config option")

// Validate checks every option before anything is written: Bind is one or
// more loopback or private addresses separated by spaces (each optionally
// prefixed by '-', Redis's "skip if absent"); Port is 1..65535; ACLFile is an
// absolute, clean path without spaces, quotes or control characters. Nothing
// from an option reaches the output unchecked: a newline in --aclfile once
// injected "bind 0.0.0.0" and "protected-mode no" (issue 12).
func (o Options) Validate() error {
	if o.Bind == "" || strings.ContainsFunc(o.Bind, unsafeRune) || strings.Contains(o.Bind, "  ") || strings.TrimSpace(o.Bind) != o.Bind {
		return fmt.Errorf("bind %q: want addresses separated by single spaces, no control character: %w", o.Bind, ErrBadOption)
	}
	for _, a := range strings.Split(o.Bind, " ") {
		if !privateAddr(strings.TrimPrefix(a, "-")) {
			return fmt.Errorf("bind %q: only loopback or private addresses: Redis must never be reachable from a public network: %w", a, ErrBadOption)
		}
	}
	if o.Port < 1 || o.Port > 65535 {
		return fmt.Errorf("port %d: want 1..65535: %w", o.Port, ErrBadOption)
	}
	if err := checkPath("aclfile", o.ACLFile); err != nil {
		return err
	}
	if f := o.ClusterConfigFile; f != "" && !clusterFileRe.MatchString(f) {
		if err := checkPath("cluster-config-file", f); err != nil {
			return fmt.Errorf("cluster-config-file %q: want a file name of [A-Za-z0-9._-] (in the server's working directory) or an absolute, clean path: %w", f, ErrBadOption)
		}
	}
	if o.TLSCertFile == "" && (o.TLSKeyFile != "" || o.TLSCAFile != "" || o.TLSAuthClients) {
		return fmt.Errorf("tls-cert-file: required with tls-key-file, tls-ca-file and tls-auth-clients: %w", ErrBadOption)
	}
	if o.TLSCertFile != "" {
		for _, f := range []struct{ name, path string }{{"tls-cert-file", o.TLSCertFile}, {"tls-key-file", o.TLSKeyFile}, {"tls-ca-file", o.TLSCAFile}} {
			if f.path == "" {
				return fmt.Errorf("%s: required with tls-cert-file: %w", f.name, ErrBadOption)
			}
			if err := checkPath(f.name, f.path); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterFileRe is a cluster-config-file given as a plain file name.
var clusterFileRe = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// checkPath checks a path option: absolute, clean, no space, quote, backslash
// or control character (the server would read any of them otherwise).
func checkPath(name, p string) error {
	switch {
	case strings.ContainsFunc(p, unsafeRune) || strings.ContainsAny(p, " \"'\\"):
		return fmt.Errorf("%s %q: no space, quote, backslash or control character: %w", name, p, ErrBadOption)
	case !filepath.IsAbs(p):
		return fmt.Errorf("%s %q: want an absolute path (the server resolves a relative one against its working directory): %w", name, p, ErrBadOption)
	case filepath.Clean(p) != p:
		return fmt.Errorf("%s %q: want a clean path (%s): %w", name, p, filepath.Clean(p), ErrBadOption)
	}
	return nil
}

// unsafeRune reports a character no option may hold: a control character, or a
// Unicode format character (a bidi override shows a reader another text).
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
}

// DefaultOptions listen on loopback only.
var DefaultOptions = Options{Bind: "127.0.0.1 -::1", Port: 6379, ACLFile: "/etc/redis/users.acl"}

// Render is the fragment for in (on a split instance, for its own server). It
// refuses a bind address that is not loopback or private, and an instance
// without a server section. On a cluster instance it is the config of each of
// its nodes: cluster mode on, with the same hardening.
func Render(spec *keyspec.Spec, in *keyspec.Instance, o Options) (string, error) {
	return RenderServer(spec, in, "", o)
}

// RenderServer is the fragment for one server of an instance: "" is the
// instance's own server section, any other name one of its servers.
func RenderServer(spec *keyspec.Spec, in *keyspec.Instance, server string, o Options) (string, error) {
	srv := in.ServerNamed(server)
	if srv == nil {
		return "", fmt.Errorf("instance %s has no server %q (servers: %s)", in.Name, server, strings.Join(in.ServerNames()[1:], ", "))
	}
	if srv.Persistence == "" {
		return "", fmt.Errorf("%s:%d: instance %q has no server section (persistence, eviction)", in.File, in.Line, in.Name)
	}
	if err := o.Validate(); err != nil {
		return "", err
	}
	cluster := in.Topology == keyspec.TopologyCluster
	if cluster && o.Port+clusterBusOffset > 65535 {
		return "", fmt.Errorf("port %d: a cluster node's bus listens on port+%d (%d), beyond 65535: choose a port up to %d: %w",
			o.Port, clusterBusOffset, o.Port+clusterBusOffset, 65535-clusterBusOffset, ErrBadOption)
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	switch {
	case cluster:
		w("# Code generated by luagen from %s for the nodes of cluster instance %s. DO NOT EDIT.", oneLine(spec.File), in.Name)
		w("%s", comment("Hardened redis.conf fragment for a cluster node"+cite(in.Source)+": every node of "+in.Name+
			", primary or replica, starts from it, each with its own --port and cluster-config-file; include it after the "+
			"distribution's defaults. It is not for a standalone server: a node in cluster mode serves only its slots."))
	case srv.Name == "":
		w("# Code generated by luagen from %s for instance %s. DO NOT EDIT.", oneLine(spec.File), in.Name)
		w("%s", comment("Hardened redis.conf fragment"+cite(in.Source)+": include it after the distribution's defaults."))
	default:
		w("# Code generated by luagen from %s for server %s of instance %s. DO NOT EDIT.", oneLine(spec.File), srv.Name, in.Name)
		w("%s", comment("Hardened redis.conf fragment"+cite(srv.Source)+": include it after the distribution's defaults."))
	}
	if in.Split() {
		var dbs []string
		for _, d := range in.DBsOn(srv) {
			dbs = append(dbs, fmt.Sprintf("%s (db %d, %s)", d.Name, d.Index, d.URLEnv))
		}
		w("%s", comment("Databases on this server: "+strings.Join(dbs, ", ")+". "+oneLine(srv.Doc)))
	}
	w("")
	w("# Network: loopback or the private interface only; never a public address.")
	w("bind %s", o.Bind)
	w("protected-mode yes")
	if o.TLSCertFile == "" {
		w("port %d", o.Port)
	} else {
		w("%s", comment("TLS only, for traffic that crosses a trust boundary: the plaintext port is closed. Clients connect "+
			"with rediss:// URLs; replicas and cluster buses of this server speak TLS too."))
		w("port 0")
		w("tls-port %d", o.Port)
		w("tls-cert-file %s", o.TLSCertFile)
		w("tls-key-file %s", o.TLSKeyFile)
		w("tls-ca-cert-file %s", o.TLSCAFile)
		w("tls-replication yes")
		w("tls-cluster yes")
		if o.TLSAuthClients {
			w("%s", comment("Mutual TLS: a client must also present a certificate of the CA above (the ACL still decides what it may do)."))
			w("tls-auth-clients yes")
		} else {
			w("%s", comment("Clients are not asked for certificates: the ACL's passwords authenticate them."))
			w("tls-auth-clients no")
		}
	}
	if cluster {
		w("")
		clusterSection(w, in, srv, o)
	}
	w("")
	if srv.Name == "" {
		w("# Users: the default user is off; `luagen acl --instance %s` writes this file.", in.Name)
	} else {
		w("# Users: the default user is off; `luagen acl --instance %s --server %s` writes this file.", in.Name, srv.Name)
	}
	w("aclfile %s", o.ACLFile)
	w("acllog-max-len 128")
	w("")
	w("# Surfaces no application needs: off.")
	w("enable-debug-command no")
	w("enable-module-command no")
	w("enable-protected-configs no")
	w("")
	n, declared := databases(in, srv)
	if cluster {
		w("%s", comment(fmt.Sprintf("Databases: a cluster node has database 0 only (SELECT of another fails in cluster mode); "+
			"the spec declares %s.", declared)))
	} else if n == 1 {
		w("%s", comment(fmt.Sprintf("Databases: the spec declares %s only, so the server has 1; SELECT of any other index "+
			"fails. ACL key patterns hold in every database alike (an ACL cannot name a database), so this limit is what keeps a "+
			"user's keys out of databases no audit or cutover looks at. Lowering this on a server whose RDB/AOF holds keys in a "+
			"higher database stops it from starting: move or delete them first.", declared)))
	} else {
		w("%s", comment(fmt.Sprintf("Databases: the spec declares %s here, so the server has %d (0..%d); SELECT of any other index "+
			"fails. ACL key patterns hold in every database alike (an ACL cannot name a database), so this limit is what keeps a "+
			"user's keys out of databases no audit or cutover looks at; an index below the highest that the spec does not "+
			"declare stays reachable through SELECT where a user has it. Lowering this on a server whose RDB/AOF holds keys in a "+
			"higher database stops it from starting: move or delete them first.", declared, n, n-1)))
	}
	w("databases %d", n)
	w("")
	lost := "losing what the AOF has not synced"
	if srv.Persistence == keyspec.PersistNone {
		lost = "and the server starts empty (it persists nothing)"
	}
	w("%s", comment(fmt.Sprintf("Scripts: after %d ms a running script or function makes the server answer BUSY to every "+
		"other call (which the services treat as an outage) and accept SCRIPT KILL / FUNCTION KILL from the operator user "+
		"(`%s`). The declared scripts do bounded work in well under a millisecond, so %d ms means a bug; Redis's default "+
		"(5000 ms) would hold every client five seconds first. A script that has written cannot be killed (UNKILLABLE): "+
		"then only stopping the process ends it (SHUTDOWN NOSAVE as the user `luagen acl --admin-user NAME` adds, or "+
		"SIGKILL), %s.",
		BusyReplyThresholdMS, acl.OperatorUser(in), BusyReplyThresholdMS, lost)))
	w("busy-reply-threshold %d", BusyReplyThresholdMS)
	w("")
	switch srv.Persistence {
	case keyspec.PersistAOF:
		w("%s", comment("Persistence: append-only file ("+oneLine(srv.PersistenceSource)+")."))
		w("appendonly yes")
		w("appendfsync everysec")
		w("aof-use-rdb-preamble yes")
		w("%s", comment("A torn tail (a crash mid-write) loads up to its last complete command, even inside a script's MULTI block: run redis-check-aof --fix on the file before starting, or BGREWRITEAOF right after such a load, so the torn script's half is not committed by the next restart."))
		w("aof-load-truncated yes")
		w(`save 3600 1 300 100 60 10000`)
	case keyspec.PersistNone:
		w("%s", comment("Persistence: none ("+oneLine(srv.PersistenceSource)+")."))
		w("appendonly no")
		w(`save ""`)
	}
	w("")
	hard, soft, largest := pubSubLimits(spec, in, srv)
	if channelsOn(spec, in, srv) == 0 {
		w("%s", comment(fmt.Sprintf("Pub/Sub output buffers: the spec declares no channel here and the aclfile grants none, "+
			"so no client subscribes; the limit (%d bytes, or %d for %d s) is small so that none could take memory, which "+
			"Redis's default (32 MB per subscriber) would let it.", hard, soft, pubsubSoftSeconds)))
	} else {
		w("%s", comment(fmt.Sprintf("Pub/Sub output buffers: a subscriber that falls %d messages of "+
			"the largest payload its channels allow (%d bytes) behind, or %d for %d s, is disconnected. Pub/Sub is at-most-once and a "+
			"subscriber must reconcile from its source of truth after it reconnects, so nothing is lost that a larger buffer "+
			"would keep; the buffers count in the instance's memory sizing, and Redis's default (32 MB per subscriber) would let a "+
			"few slow subscribers take it.", pubsubHardMessages, largest, pubsubSoftMessages, pubsubSoftSeconds)))
	}
	w("client-output-buffer-limit pubsub %d %d %d", hard, soft, pubsubSoftSeconds)
	w("")
	w("%s", comment("Eviction: "+oneLine(srv.EvictionReason)+"."))
	w("maxmemory-policy %s", srv.EvictionPolicy)
	for _, q := range srv.TBD {
		w("%s", comment("TBD "+strings.TrimSuffix(oneLine(q), ".")+"."))
	}
	if len(srv.TBD) > 0 {
		w("# maxmemory is left to the operator until then.")
	} else {
		w("%s", comment(fmt.Sprintf("maxmemory is left to the operator: set it to the instance's memory budget (`luagen sizing --instance %s` measures one).", in.Name)))
	}
	return b.String(), nil
}

// clusterBusOffset is where a cluster node's bus listens: its port plus this
// (Redis's default cluster-port).
const clusterBusOffset = 10000

// ClusterNodeTimeoutMS is the generated cluster-node-timeout: how long a node
// may be unreachable before the others mark it failing and a replica of it
// takes over.
const ClusterNodeTimeoutMS = 15000

// clusterSection writes the cluster settings of a node of cluster instance in.
func clusterSection(w func(string, ...any), in *keyspec.Instance, srv *keyspec.Server, o Options) {
	file := o.ClusterConfigFile
	if file == "" {
		file = fmt.Sprintf("nodes-%d.conf", o.Port)
	}
	w("%s", comment(fmt.Sprintf("Cluster: %s is a Redis Cluster (topology: cluster in the spec). The node writes its view of the "+
		"cluster to %s (in its working directory unless absolute; never edit it, never share it between nodes); its bus "+
		"listens on port %d (port+%d): open it between the nodes, as privately as the port. Create the cluster once every node "+
		"runs (redis-cli --cluster create ... --cluster-replicas N).", in.Name, file, o.Port+clusterBusOffset, clusterBusOffset)))
	w("cluster-enabled yes")
	w("cluster-config-file %s", file)
	w("%s", comment(fmt.Sprintf("A node unreachable for %d ms is marked failing and a replica of it promoted; shorter fails "+
		"over sooner but mistakes a pause (a fork for the RDB/AOF rewrite, a slow disk) for a failure.", ClusterNodeTimeoutMS)))
	w("cluster-node-timeout %d", ClusterNodeTimeoutMS)
	w("%s", comment("Every script takes keys of one hash slot (generate refuses a CROSSSLOT script on a cluster instance), so "+
		"no call spans a lost slot and a live one: while some slots have no node, the others keep serving."))
	w("cluster-require-full-coverage no")
	reads := "its keys are the source of truth (" + oneLine(srv.PersistenceSource) + ")"
	if srv.Persistence == keyspec.PersistNone {
		reads = "a stale read there is a wrong answer, not a cache miss"
	}
	w("%s", comment("A node cut off from the majority (the cluster down for it) refuses reads too: a replica promoted on the "+
		"other side may already have taken writes it has not seen, and "+reads+"."))
	w("cluster-allow-reads-when-down no")
}

// channelsOn is how many channels of in are placed on srv (all of the
// instance's when the instance is not split).
func channelsOn(spec *keyspec.Spec, in *keyspec.Instance, srv *keyspec.Server) int {
	n := 0
	for _, c := range spec.ChannelsOf(in) {
		if !in.Split() || c.ServerOf() == srv {
			n++
		}
	}
	return n
}

// BusyReplyThresholdMS is the generated busy-reply-threshold (lua-time-limit
// before Redis 7): how long a script or function runs before the server answers
// BUSY to others and lets the operator kill it.
const BusyReplyThresholdMS = 1000

// databases is the databases setting of srv: one above the highest index of a
// database the spec places there (cut-over legacy databases included, so that
// a server whose files still hold their keys starts), and the list of them.
func databases(in *keyspec.Instance, srv *keyspec.Server) (int, string) {
	n := 1
	var names []string
	for _, d := range in.DBs {
		if d.ServerOf() != srv {
			continue
		}
		n = max(n, d.Index+1)
		names = append(names, fmt.Sprintf("%s (db %d)", d.Name, d.Index))
	}
	return n, strings.Join(names, ", ")
}

// cite is " (source: S)" for a spec entry's source, or "" when it has none.
func cite(source string) string {
	if source = oneLine(source); source != "" {
		return " (source: " + source + ")"
	}
	return ""
}

// The Pub/Sub output-buffer limit, in messages of the instance's largest channel
// payload: the hard limit disconnects at once, the soft one after it has been
// exceeded for pubsubSoftSeconds.
const (
	pubsubHardMessages = 1024
	pubsubSoftMessages = 256
	pubsubSoftSeconds  = 10
	// pubsubMinPayload is the message size assumed for an instance with no
	// channel (no subscriber is expected there: its ACL grants no channel).
	pubsubMinPayload = 512
)

// PubSubLimits are the hard and soft client-output-buffer-limit pubsub of in, in
// bytes, and the largest channel payload (max_bytes) they are counted in.
func PubSubLimits(spec *keyspec.Spec, in *keyspec.Instance) (hard, soft int64, largest int) {
	return pubSubLimits(spec, in, nil)
}

// pubSubLimits is PubSubLimits over the channels placed on srv (all of the
// instance's when srv is nil or the instance is not split).
func pubSubLimits(spec *keyspec.Spec, in *keyspec.Instance, srv *keyspec.Server) (hard, soft int64, largest int) {
	largest = pubsubMinPayload
	for _, c := range spec.ChannelsOf(in) {
		if srv == nil || !in.Split() || c.ServerOf() == srv {
			largest = max(largest, c.MaxBytes)
		}
	}
	return int64(largest) * pubsubHardMessages, int64(largest) * pubsubSoftMessages, largest
}

// oneLine folds spec text (seeds, reasons) into one line: nothing from the spec
// can start a directive of its own.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return ' '
		}
		return r
	}, s)), " ")
}

// comment wraps text into "# " lines of at most about 90 columns.
func comment(text string) string {
	var lines []string
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 90 && line != "#" {
			lines = append(lines, line)
			line = "#"
		}
		line += " " + w
	}
	return strings.Join(append(lines, line), "\n")
}

// privateAddr reports whether a is a loopback or private (RFC 1918, RFC 4193) address.
func privateAddr(a string) bool {
	ip, err := netip.ParseAddr(a)
	return err == nil && (ip.IsLoopback() || ip.IsPrivate())
}
