// Package keyspec parses and validates keyspec.yaml, the declaration of every Redis
// key, channel, ACL user and Lua script signature, into a resolved model that the
// code generator, the linter and the ACL renderer share.
//
// Parsing is strict: unknown fields, duplicate entries and dangling references are
// errors, and every error names the file and line of the entry at fault.
package keyspec

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// Pos is where an entry is declared.
type Pos struct {
	File string
	Line int
}

// Spec is a parsed and validated keyspec.yaml. Every slice is sorted by name, so
// anything derived from a Spec is deterministic.
type Spec struct {
	Pos
	SHA256    string // hex SHA-256 of the spec file's bytes
	Version   int
	Instances []*Instance
	Users     []*User
	Enums     []*Enum
	Keys      []*Key
	Channels  []*Channel
	Scripts   []*Script
	// ScriptsLine is the line of the scripts: section, where a script's entry
	// is declared; 0 when the spec has none.
	ScriptsLine int
	// Forbid are the rules the spec declares for every instance (forbid: at
	// the top level); each instance's Forbid holds them too, after its own.
	Forbid []Forbid
	// Breaking is how luagen breaking treats changes of this spec (breaking:).
	Breaking Breaking
	// Alerts are the alerting rules the spec declares about its services'
	// own metrics (alerts:), in the order it declares them.
	Alerts []*Alert
	// Deprecated lists the uses of deprecated spec fields (seed for source), for
	// luagen lint to report; the spec is valid with them.
	Deprecated []Deprecation
}

// Deprecation is one use of a deprecated field.
type Deprecation struct {
	Pos
	Msg string
}

// Instance is one Redis server (or cluster).
type Instance struct {
	Pos
	Name     string
	Source   string
	Topology string // TopologyStandalone or TopologyCluster
	// Client is the Go client the generated wrappers run on: ClientGoRedis
	// (the default) or ClientRueidis.
	Client string
	// Mode is how the instance's scripts run: ModeEvalSHA (the default) or
	// ModeFunctions.
	Mode string
	// Prefix is the deployment prefix bound at run time in front of every key and
	// channel of the instance; nil when its patterns are the whole names.
	Prefix *DeploymentPrefix
	Forbid []Forbid
	// Server is the instance's own server: the databases without a server of their
	// own (every database, unless the instance is split).
	Server Server
	// Servers are the other servers the instance's databases are split onto
	// (servers: in the spec), sorted by name; empty for an instance on one server.
	Servers []*Server
	DBs     []*DB // sorted by index
	// Channels are the instance's channels, sorted by name.
	Channels []*Channel
	// CoverageFloor is the least share of its scripts' Lua the tests must run
	// (coverage_floor:), which luagen cover --check enforces; nil: none.
	CoverageFloor *CoverageFloor
}

// Clients generated wrappers run on.
const (
	ClientGoRedis = "go-redis"
	ClientRueidis = "rueidis"
)

// Script modes of an instance.
const (
	// ModeEvalSHA: scripts run by EVALSHA; the loader user loads them (SCRIPT
	// LOAD) at deploy time or on NOSCRIPT.
	ModeEvalSHA = "evalsha"
	// ModeFunctions: the scripts are one Redis Functions library the deploy step
	// loads (FUNCTION LOAD REPLACE); wrappers call FCALL/FCALL_RO, and no
	// application code can load code. Functions persist in RDB/AOF and replicate.
	ModeFunctions = "functions"
)

// Functions reports whether the instance's scripts run as Redis Functions.
func (in *Instance) Functions() bool { return in.Mode == ModeFunctions }

// Topologies.
const (
	TopologyStandalone = "standalone"
	TopologyCluster    = "cluster"
)

// DeploymentPrefix says that every key and channel name of an instance starts
// with a prefix chosen per deployment ("acme:production:"), bound when the
// client is built. Patterns, user prefixes and ACL globs are relative to it.
type DeploymentPrefix struct {
	Pos
	Env         string // environment variable of an explicit prefix, or ""
	DefaultFrom string // environment variable holding the URL a default is derived from, or ""
	MaxLen      int    // the longest prefix accepted, separator included
	Source      string
	// Reserved are what no segment of a deployment prefix of the instance may
	// be (runtime.CheckPrefix refuses them): the families its ACL grants, from
	// every key and channel pattern and every user prefix of the instance
	// (FamilyReserved: "cache" of cache:*, or "b_*", a start no segment may
	// have, of b_{id}_settings). Deployment A's grant A+"cache:*" then never
	// reaches a deployment nested in A (A+"eu:"), and a nested deployment's
	// grants never reach A's names. Sorted; set by Parse.
	Reserved []string
}

// Deployment prefix limits.
const (
	DefaultPrefixMaxLen = 64
	MaxPrefixMaxLen     = 128
)

// Server is one redis-server of an instance and how it is configured.
type Server struct {
	Pos
	// Name is "" for the instance's own server, else its name under servers.
	Name              string
	Source            string
	Doc               string
	Persistence       string // PersistAOF or PersistNone
	PersistenceSource string
	EvictionPolicy    string // a maxmemory-policy
	EvictionReason    string
	TBD               []string // questions the sources leave open
}

// Persistence modes.
const (
	PersistAOF  = "aof_everysec"
	PersistNone = "none"
)

// Forbid is a rule an instance (or the whole spec) declares and luagen lint
// enforces; exactly one of Kind, Value, Commands, Shape, TTL and Unbounded is
// set. The tool itself imposes none of them: "every key expires" or "no
// streams" is one service's policy, which its spec states.
type Forbid struct {
	Pos
	// Kind: no key or script of this kind; Words: and none whose name (a key's
	// literal segments, a script's name) has one of these words. The kind itself
	// is such a word.
	Kind  string
	Words []string
	// Value: no key that may hold this value type.
	Value string
	// Commands: no script calls one of these commands, and no ACL grants them.
	Commands []string
	// Shape: no script has this shape (ShapeGetIncrement), unless its kind is
	// one of UnlessKind.
	Shape      string
	UnlessKind []string
	// TTL: ForbidTTLNone, no key of the instance goes without a TTL ("every
	// key expires"); ForbidTTLUnbounded, none does unless it declares a bound
	// the tool checks (a stream's max_len or retention, a list's max_len).
	TTL string
	// Unbounded: no key that may hold this value type (stream or list)
	// without a declared bound (max_len; retention for a stream).
	Unbounded string
	// SpecWide: the rule is declared at the top level of the spec, for every
	// instance.
	SpecWide bool
	Source   string
}

// TTL values of a forbid rule.
const (
	ForbidTTLNone      = "none"
	ForbidTTLUnbounded = "unbounded"
)

// Forbidden shapes.
const (
	// ShapeGetIncrement is a script that reads a key (GET, HGET, HMGET, HGETALL)
	// and increments it (INCR, INCRBY, HINCRBY, DECR, DECRBY): a get+increment poll.
	ShapeGetIncrement = "get_increment"
)

// Split reports whether the instance's databases are on more than one server.
func (in *Instance) Split() bool { return len(in.Servers) > 0 }

// ServerNamed is the instance's server called name ("" for its own), or nil.
func (in *Instance) ServerNamed(name string) *Server {
	if name == "" {
		return &in.Server
	}
	return first(in.Servers, func(s *Server) bool { return s.Name == name })
}

// ServerNames lists the names of the servers of a split instance, its own
// server first as "" .
func (in *Instance) ServerNames() []string {
	names := []string{""}
	for _, s := range in.Servers {
		names = append(names, s.Name)
	}
	return names
}

// DBsOn are the live databases on srv, one of the instance's servers.
func (in *Instance) DBsOn(srv *Server) []*DB {
	return filter(in.LiveDBs(), func(d *DB) bool { return d.ServerOf() == srv })
}

// ForbidsCommand returns the rule forbidding cmd (lower case) on the instance, or nil.
func (in *Instance) ForbidsCommand(cmd string) *Forbid {
	if i := slices.IndexFunc(in.Forbid, func(f Forbid) bool { return slices.Contains(f.Commands, cmd) }); i >= 0 {
		return &in.Forbid[i]
	}
	return nil
}

// DB is one logical database of an instance, reached through one URL variable.
type DB struct {
	Pos
	Instance *Instance
	Name     string
	Index    int
	URLEnv   string
	User     *User
	Source   string
	Doc      string
	Legacy   *Legacy // nil for a database that is not a legacy stub
	// Server is the server the database lives on when the instance is split and
	// it is not on the instance's own server; nil otherwise.
	Server *Server
}

// ServerOf is the server the database lives on.
func (d *DB) ServerOf() *Server {
	if d.Server != nil {
		return d.Server
	}
	return &d.Instance.Server
}

// Legacy marks a database that exists only until a cutover.
type Legacy struct {
	Pos
	State string // "alive" or "cut_over"
}

// Live reports whether the database is generated: not a legacy stub that was cut over.
func (d *DB) Live() bool { return d.Legacy == nil || d.Legacy.State == LegacyAlive }

// ID is "instance.db", the form keys use to name their database.
func (d *DB) ID() string { return d.Instance.Name + "." + d.Name }

// Legacy states.
const (
	LegacyAlive   = "alive"
	LegacyCutOver = "cut_over"
)

// User is an ACL user of one instance.
type User struct {
	Pos
	Name            string
	Instance        *Instance
	Source          string
	Select          Select
	KeyPrefixes     []*Prefix
	ChannelPrefixes []*Prefix
	ExtraCommands   []ExtraCommand
}

// ExtraCommand is a command granted by hand, beyond what the user's scripts and
// the runtime need; it always says why.
type ExtraCommand struct {
	Pos
	Command  string // lower case; "script|exists" for a subcommand
	Reason   string
	LegacyDB *DB // granted only while this legacy database is alive
}

// Live reports whether the command is granted (its legacy database, if any, is alive).
func (e ExtraCommand) Live() bool { return e.LegacyDB == nil || e.LegacyDB.Live() }

// Select says whether the user may run SELECT (needed to reach a DB other than 0).
type Select struct {
	Pos
	Allow  bool
	Reason string
}

// Prefix is a key or channel prefix granted to a user, with where it comes from.
type Prefix struct {
	Pos
	Prefix   string // "" only on an instance with a deployment prefix: all of it
	Source   string
	Reason   string
	LegacyDB *DB // granted only while this legacy database is alive
	// Deployment is set when the prefix is relative to its instance's deployment prefix.
	Deployment bool
	// Families are what the empty prefix of a deployment (all of it) grants:
	// one ACL pattern per family of the key patterns of the user's databases
	// (or of the instance's channel patterns),
	// "cache:*" for cache:{name}, the exact name for a one-segment pattern;
	// never "*", which would grant a deployment nested in this one
	// (shop.example.com:'s * reaches shop.example.com:eu:). Sorted; set by Parse.
	Families []string
}

// Live reports whether the prefix is granted (its legacy database, if any, is alive).
func (p *Prefix) Live() bool { return p.LegacyDB == nil || p.LegacyDB.Live() }

// Enum is a bounded set of values a placeholder, or a reply field, may take.
type Enum struct {
	Pos
	Name   string
	Source string
	Values []string
}

// Key is a declared key pattern.
type Key struct {
	Pos
	Name      string
	Source    string
	Doc       string
	DB        *DB
	Kind      string // free text; forbid rules match on it
	Pattern   Pattern
	Value     []string
	Fields    []string      // hash: its fields; stream: its entries' fields
	MaxBytes  int           // the largest value (string types) or member the key holds
	MaxLen    int           // list, stream: the most elements it keeps (trimmed by every write)
	Retention time.Duration // stream: entries older than this are trimmed (MINID) by every write
	TTL       TTL
}

// Expires reports whether the key's TTL rule gives it an expiry (any rule but none).
func (k *Key) Expires() bool { return k.TTL.Rule != TTLNone }

// Bounded reports whether every value type the key may hold has a declared
// bound the tool checks on every write: a stream with max_len or retention, a
// list with max_len.
func (k *Key) Bounded() bool {
	for _, v := range k.Value {
		switch {
		case v == ValueStream && (k.MaxLen > 0 || k.Retention > 0):
		case v == ValueList && k.MaxLen > 0:
		default:
			return false
		}
	}
	return len(k.Value) > 0
}

// Expectation is what the spec says holds of a key whenever it exists, after
// any script call: what a run-time check (the test harness) compares with the
// server's PTTL and LLEN/XLEN, for the cases the static reading cannot tell
// (compiler.Source.Unproven).
type Expectation struct {
	// Expires: the key always has a TTL (PTTL > 0); false for ttl none,
	// whose key never has one (PTTL -1).
	Expires bool
	// MaxTTL is the most its PTTL may be; 0 when the rule does not cap it
	// statically (window_jitter: the window is the script's argument).
	MaxTTL time.Duration
	// MaxLen is the most elements a list or stream keeps; 0: no bound.
	MaxLen int
	// MayPersist: a key that Expires may also have none, a script having
	// removed it (ttl persist).
	MayPersist bool
}

// Expectation is what the spec expects of the key at run time.
func (k *Key) Expectation() Expectation {
	e := Expectation{Expires: k.Expires(), MaxLen: k.MaxLen, MayPersist: k.TTL.Persist != ""}
	switch k.TTL.Rule {
	case TTLFixed, TTLHeartbeat:
		e.MaxTTL = k.TTL.Value
	case TTLClamped:
		e.MaxTTL = k.TTL.Max
	}
	return e
}

// KeyOf is the declared key of the instance whose pattern name matches
// (relative to the deployment prefix, if any), or nil: with Expectation, what
// a run-time check needs to judge a key a script left behind.
func (s *Spec) KeyOf(in *Instance, name string) *Key {
	return first(s.KeysOf(in), func(k *Key) bool { return k.Pattern.Match(name) })
}

// Holds reports whether the key may hold value type v.
func (k *Key) Holds(v string) bool { return slices.Contains(k.Value, v) }

// Value types of keys.
const (
	ValueString  = "string"
	ValueCounter = "counter"
	ValueHash    = "hash"
	ValueList    = "list"
	ValueSet     = "set"
	ValueZSet    = "zset"
	ValueStream  = "stream"
	ValueMsgpack = "msgpack"
	ValueJSON    = "json"
)

// Live reports whether the key is generated (its database is live).
func (k *Key) Live() bool { return k.DB.Live() }

// Instance is the instance the key lives on.
func (k *Key) Instance() *Instance { return k.DB.Instance }

// Placeholder types.
const (
	TypeUUID   = "uuid"
	TypeInt    = "int"
	TypeHex    = "hex"
	TypeName   = "name"
	TypePath   = "path"
	TypeEnum   = "enum"
	TypeSHA256 = "sha256"
	TypeHMAC   = "hmac"
)

// Enum encodings of a placeholder.
const (
	EncodeLabel  = "label"
	EncodeSHA256 = "sha256"
)

// Param is a typed placeholder of a key or channel pattern.
type Param struct {
	Pos
	Name   string
	Type   string
	Doc    string
	Min    int64 // int
	Max    int64 // int
	Len    int   // hex
	MaxLen int   // name, path
	Enum   *Enum // enum
	Encode string
}

// TTL rules.
const (
	TTLFixed        = "fixed"
	TTLWindowJitter = "window_jitter"
	TTLHeartbeat    = "heartbeat"
	TTLClamped      = "clamped"
	TTLNone         = "none"
)

// TTL is the expiry rule of a key.
type TTL struct {
	Pos
	Rule      string
	Value     time.Duration // fixed, heartbeat: the chosen value
	MaxJitter time.Duration // window_jitter
	// Max is the declared cap: for clamped the bound every TTL is clamped to, for
	// fixed and heartbeat the most the chosen Value may be (from a source
	// document; luagen lint reports a Value above it). 0: none declared.
	Max time.Duration
	// Exceeds is a declared floor a fixed or heartbeat Value must be strictly
	// above (a budget the key must outlast); 0: none declared.
	Exceeds time.Duration
	From    string // clamped: where the TTL comes from at run time ("the config")
	Reason  string // none: why the key never expires
	// Persist (clamped) is why a script may remove the key's TTL (PERSIST):
	// the caller chose to keep it until it is deleted (a lock taken for 0
	// seconds). "": no script does.
	Persist string
}

// Channel is a Pub/Sub channel pattern (no storage, no TTL).
type Channel struct {
	Pos
	Name     string
	Source   string
	Instance *Instance
	Pattern  Pattern
	MaxBytes int
	// Server is the server its messages go through when the instance is split and
	// it is not the instance's own server; nil otherwise.
	Server *Server
}

// ServerOf is the server the channel's messages go through.
func (c *Channel) ServerOf() *Server {
	if c.Server != nil {
		return c.Server
	}
	return &c.Instance.Server
}

// Replayable reports whether a client may send the script again after a
// failure that leaves its outcome unknown: a read-only script, or one declared
// replay_safe.
func (s *Script) Replayable() bool { return s.ReadOnly || s.ReplaySafe != "" }

// Script is the signature of one Lua script in lua/<instance>/<name>.lua.
type Script struct {
	Pos
	// ID is the script's entry under scripts: its name, or instance.name
	// (two instances may both have a "release"); unique in the spec, the key
	// of compiler.Load's sources.
	ID        string
	Name      string
	Source    string
	Doc       string
	Kind      string // free text; forbid rules match on it
	Instance  *Instance
	DB        *DB // the database of its keys
	ReadOnly  bool
	CrossSlot string
	// ReplaySafe says why running the script twice for one call does no harm
	// (nonce-guarded, compare-and-set); "" when it is not declared safe.
	ReplaySafe string
	Keys       []*ScriptKey
	// SharedPlaceholders are placeholders whose value is the same in every KEYS
	// position (and ARGV of type key) that has them: the wrapper refuses keys
	// that differ.
	SharedPlaceholders []string
	Argv               []*Arg
	Reply              Reply
	Errors             []*ScriptError
	// Derived are the keys and channels the script builds from an anchor
	// rather than taking them in KEYS (derived.go).
	Derived []*Derived
}

// Live reports whether the script is generated (its database is live).
func (s *Script) Live() bool { return s.DB == nil || s.DB.Live() }

// SameSlot reports whether every KEYS element of the script provably hashes to
// one Redis Cluster slot: every key it takes has a hash tag of one signature
// (the same literal text and placeholders), and every placeholder in it is a
// shared one, so the wrapper's equality checks make the tags equal. A tag of
// fixed text ("{bull}") needs no shared placeholder.
func (s *Script) SameSlot() bool {
	if s.MaxKeys() < 2 {
		return true
	}
	shared := map[string]bool{}
	for _, n := range s.SharedPlaceholders {
		shared[n] = true
	}
	sig, first := "", true
	for _, pos := range s.Keys {
		if pos.Channel != nil {
			return false // a channel name has no hash tag
		}
		for _, k := range pos.OneOf {
			if !k.Pattern.HasTag() {
				return false
			}
			for _, t := range k.Pattern.Tag() {
				if t.Param != nil && !shared[t.Param.Name] {
					return false
				}
			}
			if ts := k.Pattern.TagSignature(); first {
				sig, first = ts, false
			} else if ts != sig {
				return false
			}
		}
	}
	return true
}

// MaxKeys is the most KEYS a call passes: a repeating position counts its max.
func (s *Script) MaxKeys() int { return countSum(s.Keys, func(r Repeat) int { return r.Max }) }

// MinKeys is the fewest KEYS a call passes.
func (s *Script) MinKeys() int { return countSum(s.Keys, func(r Repeat) int { return r.Min }) }

// KeyAt is the KEYS position KEYS[n] (1-based) falls in: the n-th position, or
// the trailing repeating one for any n past the fixed positions; nil when no
// position takes n.
func (s *Script) KeyAt(n int) *ScriptKey { return positionAt(s.Keys, n) }

// ArgAt is the ARGV position ARGV[n] falls in, as KeyAt; nil when none.
func (s *Script) ArgAt(n int) *Arg { return positionAt(s.Argv, n) }

// MaxArgs is the most ARGV a call passes.
func (s *Script) MaxArgs() int { return countSum(s.Argv, func(r Repeat) int { return r.Max }) }

// position is a KEYS position (*ScriptKey) or an argument (*Arg): its Repeat
// when it is a trailing repeating one.
type position interface {
	repeat() *Repeat
}

func (k *ScriptKey) repeat() *Repeat { return k.Repeat }
func (a *Arg) repeat() *Repeat       { return a.Repeat }

// positionAt is the position of list that value n (1-based) falls in: the n-th
// position, or the trailing repeating one for any n past the fixed positions;
// nil when no position takes n.
func positionAt[P position](list []P, n int) P {
	var none P
	if n < 1 || len(list) == 0 {
		return none
	}
	if n < len(list) || (n == len(list) && list[n-1].repeat() == nil) {
		return list[n-1]
	}
	if last := list[len(list)-1]; last.repeat() != nil && n-len(list)+1 <= last.repeat().Max {
		return last
	}
	return none
}

// countSum adds up one bound (which picks) of how many values each position
// of list takes.
func countSum[P position](list []P, which func(Repeat) int) int {
	n := 0
	for _, p := range list {
		n += which(repeatCount(p.repeat()))
	}
	return n
}

// repeatCount is how many values a position with Repeat r takes: r, or
// exactly one when it does not repeat.
func repeatCount(r *Repeat) Repeat {
	if r != nil {
		return *r
	}
	return Repeat{Min: 1, Max: 1}
}

// File is the script's path relative to the Lua directory.
func (s *Script) LuaFile() string { return s.Instance.Name + "/" + s.Name + ".lua" }

// ScriptKey is one KEYS position and the declared keys it accepts, or the
// declared channel whose name it carries.
type ScriptKey struct {
	Pos
	Name  string
	Doc   string
	OneOf []*Key
	// Channel is set for a position that passes a channel's name (PUBLISH
	// KEYS[n]); OneOf is then empty. The channel's name is a key to EVALSHA
	// too: the ACL grants it as a key pattern and as a channel.
	Channel *Channel
	// Repeat is set for a trailing position that takes Min..Max keys (a lock
	// over many resources); the wrapper takes a slice.
	Repeat *Repeat
	// Unused says why the script never reads the position (callers pass it
	// for compatibility); "" for a position the script reads.
	Unused string
	// NeverCreates (creates: false) says the script writes the position's key
	// only when it exists (it reads it first), so it need not set the key's
	// expiry: the static reading cannot tell, the test harness checks it.
	NeverCreates bool
}

// Count is how many KEYS the position takes.
func (k *ScriptKey) Count() Repeat { return repeatCount(k.Repeat) }

// Repeat is how many values a trailing repeating KEYS or ARGV position takes.
type Repeat struct {
	Pos
	Min, Max int
}

// MaxRepeat is the most values a repeating position may take: what Lua's
// unpack returns at most (LUAI_MAXCSTACK), so a script can unpack(KEYS).
const MaxRepeat = 7999

// ARGV types.
const (
	ArgInt        = "int"
	ArgInt64      = "int64"
	ArgChannel    = "channel"
	ArgUnused     = "unused"
	ArgBool       = "bool"
	ArgString     = "string"
	ArgBytes      = "bytes"
	ArgDurationMS = "duration_ms"
	ArgToken      = "token"
	ArgHex        = "hex"
	ArgUUID       = "uuid"
	ArgName       = "name"
	ArgKey        = "key"  // a declared key's name, built by the wrapper like a KEYS position's (derived.go)
	ArgEnum       = "enum" // one value of a declared enum (a state name, a command's name)
)

// Arg is one ARGV position.
type Arg struct {
	Pos
	Name     string
	Type     string
	Doc      string
	Min, Max int64         // int
	MinDur   time.Duration // duration_ms
	MaxDur   time.Duration // duration_ms
	MaxBytes int           // string, bytes
	Len      int           // hex
	MaxLen   int           // name
	TTLOf    *Key          // duration_ms filled from a key's TTL by the wrapper
	MaxLenOf *Key          // int filled from a list's or stream's max_len by the wrapper
	// Channel is set for an argument that carries a declared channel's name
	// (PUBLISH ARGV[n]); Type is then ArgChannel.
	Channel *Channel
	Key     *Key // key: the declared key whose name it carries
	// Enum (type enum) is the enum whose values alone the wrapper sends: the
	// reader takes the argument for each of them, in a key's name or as a
	// command's.
	Enum *Enum
	// Optional arguments may be left out: the wrapper then sends the empty
	// string, which no present value encodes to.
	Optional bool
	// Repeat is set for a trailing argument that takes Min..Max values (Min 0:
	// the caller may leave it out, sending nothing); the wrapper takes a slice.
	Repeat *Repeat
	// Unused says why the script never reads the argument; the wrapper sends
	// the empty string and takes no value. "" for an argument it reads.
	Unused string
}

// Count is how many ARGV the argument takes.
func (a *Arg) Count() Repeat { return repeatCount(a.Repeat) }

// Exact64 reports whether the argument is a 64-bit integer sent as decimal
// text, exact only while the script passes it through (a ZADD member, a
// field, an id): Lua numbers are doubles, so tonumber and arithmetic on it
// lose what is beyond 2^53. (luagen lint's check of that arithmetic needs the
// script reader's dataflow.)
func (a *Arg) Exact64() bool { return a.Type == ArgInt64 }

// Reply field types.
const (
	ReplyInt        = "int"
	ReplyBool       = "bool"
	ReplyString     = "string"
	ReplyBytes      = "bytes"
	ReplyDurationMS = "duration_ms"
	ReplyTimeMS     = "time_ms"
	ReplyEnum       = "enum"
	ReplyStrings    = "strings"
	ReplyList       = "list"
)

// Reply is the shape of a script's reply: an array of named fields, or one
// value; or, with ByArg, one of several shapes the argument chooses.
type Reply struct {
	Pos
	TypeName string   // array reply: a name scripts with the same fields share
	Fields   []*Field // array reply
	Value    *Field   // scalar reply
	// ByArg is the argument whose value chooses the reply's shape (Shapes);
	// the generated code has one wrapper per shape, which sends its value.
	ByArg  *Arg
	Shapes []*ReplyShape
}

// ReplyShape is one shape of a reply chosen by an argument: the value the
// wrapper sends, and the reply the script gives for it.
type ReplyShape struct {
	Pos
	Value string
	Reply Reply
}

// Replies are the script's reply shapes: its one reply, or each shape of a
// reply chosen by an argument.
func (s *Script) Replies() []Reply {
	if s.Reply.ByArg == nil {
		return []Reply{s.Reply}
	}
	out := make([]Reply, len(s.Reply.Shapes))
	for i, sh := range s.Reply.Shapes {
		out[i] = sh.Reply
	}
	return out
}

// Signature is the reply's fields as text, equal for equal shapes.
func (r Reply) Signature() string {
	var b strings.Builder
	writeSignature(&b, r.All())
	return b.String()
}

func writeSignature(b *strings.Builder, fields []*Field) {
	for _, f := range fields {
		b.WriteString(f.Name + " " + f.Type)
		if f.Enum != nil {
			b.WriteString(" " + f.Enum.Name)
		}
		if f.Nullable {
			b.WriteString(" nullable")
		}
		if f.Of != "" {
			b.WriteString(" of " + f.Of)
		}
		if f.Type == ReplyList {
			b.WriteString(" " + f.TypeName + " [")
			writeSignature(b, f.Fields)
			b.WriteString("]")
		}
		b.WriteString("; ")
	}
}

// Field is a named, typed element of a reply.
type Field struct {
	Pos
	Name     string
	Type     string
	Doc      string
	Enum     *Enum
	Nullable bool // the script may answer false (nil) for it
	// List fields: each element is an array of these fields; TypeName, when
	// set, names the element's type.
	Fields   []*Field
	TypeName string
	// Of is a list field whose elements are each one value: their type (a
	// scalar type or strings; Enum is the enum of an enum element), instead
	// of Fields.
	Of string
}

// ScriptError is an error reply a script declares: redis.error_reply("CODE message").
type ScriptError struct {
	Pos
	Code string
	Doc  string
}

// Instance returns the named instance, or nil.
func (s *Spec) Instance(name string) *Instance {
	return first(s.Instances, func(in *Instance) bool { return in.Name == name })
}

// Key returns the named key, or nil.
func (s *Spec) Key(name string) *Key {
	return first(s.Keys, func(k *Key) bool { return k.Name == name })
}

// Script returns the script of ID id (its name, or instance.name), or nil.
func (s *Spec) Script(id string) *Script {
	return first(s.Scripts, func(sc *Script) bool { return sc.ID == id })
}

// ScriptOf returns the script called name on instance in, or nil.
func (s *Spec) ScriptOf(in *Instance, name string) *Script {
	return first(s.Scripts, func(sc *Script) bool { return sc.Instance == in && sc.Name == name })
}

// KeysOf lists the live keys of an instance.
func (s *Spec) KeysOf(in *Instance) []*Key {
	return filter(s.Keys, func(k *Key) bool { return k.Instance() == in && k.Live() })
}

// ScriptsOf lists the live scripts of an instance.
func (s *Spec) ScriptsOf(in *Instance) []*Script {
	return filter(s.Scripts, func(sc *Script) bool { return sc.Instance == in && sc.Live() })
}

// ChannelsOf lists the channels of an instance.
func (s *Spec) ChannelsOf(in *Instance) []*Channel {
	return filter(s.Channels, func(c *Channel) bool { return c.Instance == in })
}

// UsersOf lists the users of an instance.
func (s *Spec) UsersOf(in *Instance) []*User {
	return filter(s.Users, func(u *User) bool { return u.Instance == in })
}

// LiveDBs lists the live databases of an instance, by index.
func (in *Instance) LiveDBs() []*DB { return filter(in.DBs, (*DB).Live) }

// first is the first entry of list that match accepts, or the zero value
// (nil) when none does.
func first[T any](list []T, match func(T) bool) T {
	for _, x := range list {
		if match(x) {
			return x
		}
	}
	var none T
	return none
}

// filter lists the entries of list that keep accepts, in order; nil when
// none does.
func filter[T any](list []T, keep func(T) bool) []T {
	var out []T
	for _, x := range list {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// EnumsOf lists the enums used by the live keys and scripts of an instance.
func (s *Spec) EnumsOf(in *Instance) []*Enum {
	used := map[*Enum]bool{}
	for _, k := range s.KeysOf(in) {
		for _, p := range k.Pattern.Params() {
			if p.Enum != nil {
				used[p.Enum] = true
			}
		}
	}
	for _, c := range s.ChannelsOf(in) {
		for _, p := range c.Pattern.Params() {
			if p.Enum != nil {
				used[p.Enum] = true
			}
		}
	}
	for _, sc := range s.ScriptsOf(in) {
		for _, a := range sc.Argv {
			if a.Enum != nil {
				used[a.Enum] = true
			}
		}
		walkFields(sc.Reply.All(), func(f *Field) {
			if f.Enum != nil {
				used[f.Enum] = true
			}
		})
	}
	var out []*Enum
	for e := range used {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// walkFields calls fn on every field, list elements' fields included.
func walkFields(fields []*Field, fn func(*Field)) {
	for _, f := range fields {
		fn(f)
		walkFields(f.Fields, fn)
	}
}

// WalkFields calls fn on every field of the reply, list elements' fields included.
func (r Reply) WalkFields(fn func(*Field)) { walkFields(r.All(), fn) }

// All lists the reply's fields: the array fields, or the one scalar value (for
// a reply chosen by an argument, every shape's, in order).
func (r Reply) All() []*Field {
	if r.ByArg != nil {
		var out []*Field
		for _, sh := range r.Shapes {
			out = append(out, sh.Reply.All()...)
		}
		return out
	}
	if r.Value != nil {
		return []*Field{r.Value}
	}
	return r.Fields
}

// LivePrefixes lists the key prefixes granted to the user now.
func (u *User) LivePrefixes() []*Prefix { return filter(u.KeyPrefixes, (*Prefix).Live) }

// Exact reports whether the prefix names one key or channel rather than a
// namespace: a prefix ending in a separator (':', or '_', '-', '.', '{' for
// names as libraries write them: "b_", "{bull}:", "{") or the empty prefix of
// a whole deployment grants everything under it; a prefix ending in a letter
// or digit grants exactly that name, so "acme:prod" never grants
// "acme:production".
func (p *Prefix) Exact() bool {
	return p.Prefix != "" && !strings.ContainsAny(p.Prefix[len(p.Prefix)-1:], ":_-.{")
}

// Glob is the prefix as an ACL pattern: "shop:cart:*", or the exact name. On an
// instance with a deployment prefix it is relative to that prefix.
func (p *Prefix) Glob() string {
	if p.Exact() {
		return p.Prefix
	}
	return p.Prefix + "*"
}

// Covers reports whether every name the pattern can produce is granted by the prefix.
func (p *Prefix) Covers(pat Pattern) bool {
	if p.Prefix == "" {
		return true
	}
	if p.Exact() {
		return len(pat.Params()) == 0 && pat.LiteralPrefix() == p.Prefix
	}
	return strings.HasPrefix(pat.LiteralPrefix(), p.Prefix)
}

// Globs are the ACL patterns the prefix grants: its Glob, or for the empty
// prefix of a deployment its Families.
func (p *Prefix) Globs() []string {
	if p.Prefix == "" && p.Deployment {
		return p.Families
	}
	return []string{p.Glob()}
}

// KeyGlobs are the ACL key patterns granted to the user now.
func (u *User) KeyGlobs() []string {
	var out []string
	for _, p := range u.LivePrefixes() {
		out = append(out, p.Globs()...)
	}
	return out
}

// ChannelGlobs are the ACL channel patterns granted to the user.
func (u *User) ChannelGlobs() []string {
	var out []string
	for _, p := range u.ChannelPrefixes {
		out = append(out, p.Globs()...)
	}
	return out
}
