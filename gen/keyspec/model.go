// Package keyspec parses and validates keyspec.yaml, the declaration of every Redis
// key, channel, ACL user and Lua script signature, into a resolved model that the
// code generator, the linter and the ACL renderer share.
//
// Parsing is strict: unknown fields, duplicate entries and dangling references are
// errors, and every error names the file and line of the entry at fault.
package keyspec

import (
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
}

// Instance is one Redis server (or cluster) of HAN: vm1 or vm2.
type Instance struct {
	Pos
	Name     string
	Seed     string
	Topology string // "standalone" or "cluster"
	Forbid   []Forbid
	Server   Server
	DBs      []*DB // sorted by index
}

// Server is how the instance's redis-server is configured.
type Server struct {
	Pos
	Persistence     string // PersistAOF or PersistNone
	PersistenceSeed string
	EvictionPolicy  string // a maxmemory-policy
	EvictionReason  string
	TBD             []string // questions the seeds leave open
}

// Persistence modes.
const (
	PersistAOF  = "aof_everysec"
	PersistNone = "none"
)

// Forbid says that no key or script of a kind may live on an instance.
type Forbid struct {
	Pos
	Kind string
	Seed string
}

// DB is one logical database of an instance, reached through one URL variable.
type DB struct {
	Pos
	Instance *Instance
	Name     string
	Index    int
	URLEnv   string
	User     *User
	Seed     string
	Doc      string
	Legacy   *Legacy // nil for a database that is not a legacy stub
}

// Legacy marks a database that exists only until a cutover.
type Legacy struct {
	Pos
	State          string // "alive" or "cut_over"
	PollBudget     time.Duration
	RecoveryBudget time.Duration
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
	Seed            string
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
	Prefix   string
	Seed     string
	Reason   string
	LegacyDB *DB // granted only while this legacy database is alive
}

// Live reports whether the prefix is granted (its legacy database, if any, is alive).
func (p *Prefix) Live() bool { return p.LegacyDB == nil || p.LegacyDB.Live() }

// Enum is a bounded set of values a placeholder, or a reply field, may take.
type Enum struct {
	Pos
	Name   string
	Seed   string
	Values []string
}

// Key is a declared key pattern.
type Key struct {
	Pos
	Name     string
	Seed     string
	Doc      string
	DB       *DB
	Kind     string
	Pattern  Pattern
	Value    []string
	Fields   []string
	MaxBytes int
	TTL      TTL
}

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
	MaxLen int   // name
	Enum   *Enum // enum
	Encode string
}

// TTL rules.
const (
	TTLFixed        = "fixed"
	TTLWindowJitter = "window_jitter"
	TTLHeartbeat    = "heartbeat"
	TTLClamped      = "clamped"
)

// TTL is the expiry rule of a key.
type TTL struct {
	Pos
	Rule      string
	Value     time.Duration // fixed, heartbeat
	MaxJitter time.Duration // window_jitter
	Max       time.Duration // clamped
	Source    string        // clamped: "config" or "dns_answer"
}

// Channel is a Pub/Sub channel pattern (no storage, no TTL).
type Channel struct {
	Pos
	Name     string
	Seed     string
	Instance *Instance
	Pattern  Pattern
	MaxBytes int
}

// Script is the signature of one Lua script in lua/<instance>/<name>.lua.
type Script struct {
	Pos
	Name      string
	Seed      string
	Doc       string
	Kind      string
	Instance  *Instance
	DB        *DB // the database of its keys
	ReadOnly  bool
	CrossSlot string
	Keys      []*ScriptKey
	Argv      []*Arg
	Reply     Reply
	Errors    []*ScriptError
}

// Live reports whether the script is generated (its database is live).
func (s *Script) Live() bool { return s.DB == nil || s.DB.Live() }

// File is the script's path relative to the Lua directory.
func (s *Script) LuaFile() string { return s.Instance.Name + "/" + s.Name + ".lua" }

// ScriptKey is one KEYS position and the declared keys it accepts.
type ScriptKey struct {
	Pos
	Name  string
	OneOf []*Key
}

// ARGV types.
const (
	ArgInt        = "int"
	ArgBool       = "bool"
	ArgString     = "string"
	ArgBytes      = "bytes"
	ArgDurationMS = "duration_ms"
	ArgToken      = "token"
	ArgHex        = "hex"
	ArgUUID       = "uuid"
	ArgName       = "name"
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
}

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
)

// Reply is the shape of a script's reply: an array of named fields, or one value.
type Reply struct {
	Pos
	TypeName string   // array reply: a name scripts with the same fields share
	Fields   []*Field // array reply
	Value    *Field   // scalar reply
}

// Signature is the reply's fields as text, equal for equal shapes.
func (r Reply) Signature() string {
	var b strings.Builder
	for _, f := range r.All() {
		b.WriteString(f.Name + " " + f.Type)
		if f.Enum != nil {
			b.WriteString(" " + f.Enum.Name)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// Field is a named, typed element of a reply.
type Field struct {
	Pos
	Name string
	Type string
	Doc  string
	Enum *Enum
}

// ScriptError is an error reply a script declares: redis.error_reply("CODE message").
type ScriptError struct {
	Pos
	Code string
	Doc  string
}

// Instance returns the named instance, or nil.
func (s *Spec) Instance(name string) *Instance {
	for _, in := range s.Instances {
		if in.Name == name {
			return in
		}
	}
	return nil
}

// Key returns the named key, or nil.
func (s *Spec) Key(name string) *Key {
	for _, k := range s.Keys {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// Script returns the named script, or nil.
func (s *Spec) Script(name string) *Script {
	for _, sc := range s.Scripts {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}

// KeysOf lists the live keys of an instance.
func (s *Spec) KeysOf(in *Instance) []*Key {
	var out []*Key
	for _, k := range s.Keys {
		if k.Instance() == in && k.Live() {
			out = append(out, k)
		}
	}
	return out
}

// ScriptsOf lists the live scripts of an instance.
func (s *Spec) ScriptsOf(in *Instance) []*Script {
	var out []*Script
	for _, sc := range s.Scripts {
		if sc.Instance == in && sc.Live() {
			out = append(out, sc)
		}
	}
	return out
}

// ChannelsOf lists the channels of an instance.
func (s *Spec) ChannelsOf(in *Instance) []*Channel {
	var out []*Channel
	for _, c := range s.Channels {
		if c.Instance == in {
			out = append(out, c)
		}
	}
	return out
}

// UsersOf lists the users of an instance.
func (s *Spec) UsersOf(in *Instance) []*User {
	var out []*User
	for _, u := range s.Users {
		if u.Instance == in {
			out = append(out, u)
		}
	}
	return out
}

// LiveDBs lists the live databases of an instance, by index.
func (in *Instance) LiveDBs() []*DB {
	var out []*DB
	for _, d := range in.DBs {
		if d.Live() {
			out = append(out, d)
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
		for _, f := range sc.Reply.All() {
			if f.Enum != nil {
				used[f.Enum] = true
			}
		}
	}
	var out []*Enum
	for e := range used {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// All lists the reply's fields: the array fields, or the one scalar value.
func (r Reply) All() []*Field {
	if r.Value != nil {
		return []*Field{r.Value}
	}
	return r.Fields
}

// LivePrefixes lists the key prefixes granted to the user now.
func (u *User) LivePrefixes() []*Prefix {
	var out []*Prefix
	for _, p := range u.KeyPrefixes {
		if p.Live() {
			out = append(out, p)
		}
	}
	return out
}

// Exact reports whether the prefix names one key or channel rather than a
// namespace: a prefix ending in ':' grants everything under it, any other prefix
// grants exactly that name.
func (p *Prefix) Exact() bool { return !strings.HasSuffix(p.Prefix, ":") }

// Glob is the prefix as an ACL pattern: "han:api:*", or the exact name.
func (p *Prefix) Glob() string {
	if p.Exact() {
		return p.Prefix
	}
	return p.Prefix + "*"
}

// Covers reports whether every name the pattern can produce is granted by the prefix.
func (p *Prefix) Covers(pat Pattern) bool {
	if p.Exact() {
		return len(pat.Params()) == 0 && pat.Raw == p.Prefix
	}
	return strings.HasPrefix(pat.LiteralPrefix(), p.Prefix)
}

// KeyGlobs are the ACL key patterns granted to the user now.
func (u *User) KeyGlobs() []string {
	var out []string
	for _, p := range u.LivePrefixes() {
		out = append(out, p.Glob())
	}
	return out
}

// ChannelGlobs are the ACL channel patterns granted to the user.
func (u *User) ChannelGlobs() []string {
	var out []string
	for _, p := range u.ChannelPrefixes {
		out = append(out, p.Glob())
	}
	return out
}
