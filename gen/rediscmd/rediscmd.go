// Package rediscmd is what Redis itself says about its commands: every command and
// subcommand of the redis-server the table was generated from (arity, flags, ACL
// categories, key specs, documented arguments), read from the server's COMMAND INFO
// and COMMAND DOCS, committed as generated Go source and checked against a running
// server by this package's tests. The script reader, the compiler, lint, ACL
// derivation, the spec's extra_commands validation and the gopher-lua harness all
// ask this one table; none keeps a hand-typed list of commands.
//
// The data is read-only: the pointers Lookup returns point into the shared table.
//
// Refresh it with `make commands` (go test ./gen/rediscmd -run TestTableMatchesServer -update).
package rediscmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Flag is a command flag as COMMAND INFO reports it ("write", "noscript", ...).
type Flag string

// The command flags of Redis 7.0.
const (
	FlagWrite           Flag = "write"             // may modify the keyspace
	FlagReadonly        Flag = "readonly"          // reads keys, never modifies them
	FlagDenyOOM         Flag = "denyoom"           // refused when maxmemory is exceeded
	FlagModule          Flag = "module"            // implemented by a module
	FlagAdmin           Flag = "admin"             // administrative: configuration, replication, debugging
	FlagPubSub          Flag = "pubsub"            // a Pub/Sub command
	FlagNoScript        Flag = "noscript"          // Redis refuses it inside scripts
	FlagBlocking        Flag = "blocking"          // may block the client
	FlagLoading         Flag = "loading"           // allowed while the dataset loads
	FlagStale           Flag = "stale"             // allowed on a replica with stale data
	FlagSkipMonitor     Flag = "skip_monitor"      // not shown by MONITOR
	FlagSkipSlowlog     Flag = "skip_slowlog"      // not logged by SLOWLOG
	FlagAsking          Flag = "asking"            // allowed on an importing slot
	FlagFast            Flag = "fast"              // O(1) or O(log N)
	FlagNoAuth          Flag = "no_auth"           // allowed before authentication
	FlagMayReplicate    Flag = "may_replicate"     // may produce replication traffic (refused in no-writes scripts)
	FlagNoMandatoryKeys Flag = "no_mandatory_keys" // may take keys but need not
	FlagNoAsyncLoading  Flag = "no_async_loading"  // refused during async loading
	FlagNoMulti         Flag = "no_multi"          // refused inside MULTI
	FlagMovableKeys     Flag = "movablekeys"       // key positions depend on the arguments
	FlagAllowBusy       Flag = "allow_busy"        // allowed while a script runs too long
)

// KeyFlag is a key-spec flag as COMMAND INFO reports it ("RW", "access", ...).
type KeyFlag string

// The key-spec flags of Redis 7.0.
const (
	KeyRO            KeyFlag = "RO"             // read only
	KeyRW            KeyFlag = "RW"             // read and modified
	KeyOW            KeyFlag = "OW"             // overwritten without being read
	KeyRM            KeyFlag = "RM"             // removed
	KeyAccess        KeyFlag = "access"         // the value is returned, copied or used
	KeyUpdate        KeyFlag = "update"         // the value is updated or added to
	KeyInsert        KeyFlag = "insert"         // only new data is added
	KeyDelete        KeyFlag = "delete"         // data is removed
	KeyNotKey        KeyFlag = "not_key"        // not a key (a shard channel), only for cluster routing
	KeyIncomplete    KeyFlag = "incomplete"     // the spec may miss keys (it cannot find them all)
	KeyVariableFlags KeyFlag = "variable_flags" // the flags depend on the arguments
)

// Command is one Redis command or subcommand.
type Command struct {
	// Name is lower case: "get", or "client|list" for a subcommand (the form ACL rules use).
	Name string
	// Arity is Redis's: N means exactly N arguments counting the command name (and,
	// for a subcommand, the container's name too); -N means at least N.
	Arity int
	// Flags are the command's flags, as COMMAND INFO lists them.
	Flags []Flag
	// Categories are its ACL categories without the '@': "write", "dangerous", ...
	Categories []string
	// Tips are COMMAND INFO's tips ("nondeterministic_output", "request_policy:all_shards").
	Tips []string
	// KeySpecs say where its keys are among the arguments.
	KeySpecs []KeySpec
	// Group is COMMAND DOCS's group ("string", "generic", "server", ...).
	Group string
	// Since is the Redis version that added it.
	Since string
	// Summary is COMMAND DOCS's one-line summary.
	Summary string
	// DocFlags are COMMAND DOCS's doc_flags ("deprecated", "syscmd").
	DocFlags []string
	// ReplacedBy names what replaces a deprecated command.
	ReplacedBy string
	// Arguments are COMMAND DOCS's arguments, after the command name.
	Arguments []Argument
	// Subcommands of a container command (CLIENT, SCRIPT, OBJECT, ...), by name.
	Subcommands []Command
	// MayReplicate: Redis refuses the command in a no-writes script although it
	// is not flagged write (PUBLISH, PFCOUNT, ...: the may_replicate flag, which
	// COMMAND INFO of Redis 7.0 does not list). Found when the table is generated,
	// by calling each command from a no-writes script on the scratch server.
	MayReplicate bool

	container *Command
}

// KeySpec is one key specification: where to start looking (BeginSearch) and
// which arguments from there are keys (FindKeys).
type KeySpec struct {
	Notes       string
	Flags       []KeyFlag
	BeginSearch BeginSearch
	FindKeys    FindKeys
}

// BeginSearch is where a key spec starts: at a fixed index, or after a keyword.
type BeginSearch struct {
	Type      string // "index", "keyword" or "unknown"
	Index     int    // type index: the argument index (the command name is 0)
	Keyword   string // type keyword: the keyword that precedes the keys
	StartFrom int    // type keyword: where to start looking; negative counts from the end, backwards
}

// FindKeys is which arguments, from where BeginSearch found, are keys.
type FindKeys struct {
	Type      string // "range", "keynum" or "unknown"
	LastKey   int    // range: the last key relative to the first; -1 the last argument, -2 the one before, ...
	KeyStep   int    // range and keynum: how many arguments from one key to the next
	Limit     int    // range with LastKey -1: only 1/Limit of the remaining arguments are keys (0, 1: all)
	KeyNumIdx int    // keynum: the argument holding the number of keys, relative to the first
	FirstKey  int    // keynum: the first key, relative to where the search began
}

// Argument is one documented argument of a command (COMMAND DOCS).
type Argument struct {
	Name string
	// Type is key, string, integer, double, pattern, unix-time, pure-token, oneof or block.
	Type string
	// Token is the literal word that introduces the argument ("DB", "STREAMS"), if any.
	Token string
	// Flags are "optional", "multiple", "multiple_token".
	Flags []string
	// KeySpec is the index into the command's KeySpecs when Type is key.
	KeySpec int
	// Arguments are the members of a oneof or a block.
	Arguments []Argument
}

// Has reports whether the command has flag f.
func (c *Command) Has(f Flag) bool { return slices.Contains(c.Flags, f) }

// RefusedReadOnly reports whether Redis refuses the command in a script that
// declares no-writes (and in EVALSHA_RO): it is flagged write or may_replicate.
func (c *Command) RefusedReadOnly() bool {
	return c.Has(FlagWrite) || c.Has(FlagMayReplicate) || c.MayReplicate
}

// InCategory reports whether the command is in ACL category cat ("dangerous" or "@dangerous").
func (c *Command) InCategory(cat string) bool {
	return slices.Contains(c.Categories, strings.TrimPrefix(cat, "@"))
}

// Container is the command a subcommand belongs to; nil for a top-level command.
func (c *Command) Container() *Command { return c.container }

// IsContainer reports whether the command has subcommands (CLIENT, OBJECT, ...).
func (c *Command) IsContainer() bool { return len(c.Subcommands) > 0 }

// Subcommand is the subcommand sub ("list" or "LIST") of a container; nil when it has none of that name.
func (c *Command) Subcommand(sub string) *Command {
	name := c.Name + "|" + strings.ToLower(sub)
	for i := range c.Subcommands {
		if c.Subcommands[i].Name == name {
			return &c.Subcommands[i]
		}
	}
	return nil
}

// Words is the command as a call spells it: ["client", "list"] for "client|list".
func (c *Command) Words() []string { return strings.Split(c.Name, "|") }

// Display is the command in upper case as people write it: "CLIENT LIST".
func (c *Command) Display() string { return strings.ToUpper(strings.ReplaceAll(c.Name, "|", " ")) }

// HasToken reports whether some argument of the command (at any depth) is
// introduced by token ("DB"), compared case-insensitively.
func (c *Command) HasToken(token string) bool { return hasToken(c.Arguments, token) }

func hasToken(args []Argument, token string) bool {
	for _, a := range args {
		if strings.EqualFold(a.Token, token) || hasToken(a.Arguments, token) {
			return true
		}
	}
	return false
}

// Errors of Resolve, CheckArity and the key-position functions, for errors.Is.
var (
	ErrUnknownCommand    = errors.New("unknown command")
	ErrUnknownSubcommand = errors.New("unknown subcommand")
	ErrArity             = errors.New("wrong number of arguments")
)

var byName = map[string]*Command{}

func init() {
	for i := range table {
		c := &table[i]
		byName[c.Name] = c
		for j := range c.Subcommands {
			s := &c.Subcommands[j]
			s.container = c
			byName[s.Name] = s
		}
	}
}

// Lookup is the command or subcommand called name ("get", "GET", "client|list");
// nil when the server the table came from does not know it.
func Lookup(name string) *Command { return byName[strings.ToLower(name)] }

// All lists every command and subcommand, sorted by name.
func All() []*Command {
	out := make([]*Command, 0, len(byName))
	for _, c := range byName {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Resolve is the command a call runs, args[0] being the command's name: for a
// container with a second argument, the subcommand it names. Like Redis, a
// container called alone resolves to the container (whose arity then refuses it).
// The error matches ErrUnknownCommand or ErrUnknownSubcommand.
func Resolve(args []string) (*Command, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: empty call", ErrUnknownCommand)
	}
	c := Lookup(args[0])
	if c == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownCommand, args[0])
	}
	if len(args) == 1 || !c.IsContainer() {
		return c, nil
	}
	sub := c.Subcommand(args[1])
	if sub == nil {
		return nil, fmt.Errorf("%w %q of %s", ErrUnknownSubcommand, args[1], c.Display())
	}
	return sub, nil
}

// ArityOK reports whether a call of n arguments, counting the command name (and
// the subcommand's), satisfies the command's arity.
func (c *Command) ArityOK(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// ArityText says what the arity asks for: "exactly 2 arguments", "at least 3 arguments" (counting the name).
func (c *Command) ArityText() string {
	if c.Arity >= 0 {
		return fmt.Sprintf("exactly %d arguments", c.Arity)
	}
	return fmt.Sprintf("at least %d arguments", -c.Arity)
}

// CheckArity is ArityOK as an error matching ErrArity.
func (c *Command) CheckArity(n int) error {
	if c.ArityOK(n) {
		return nil
	}
	return fmt.Errorf("%w: %s takes %s counting its name, got %d", ErrArity, c.Display(), c.ArityText(), n)
}

// The error texts Redis gives a script's redis.call / redis.pcall (script.c, scriptCall).
const (
	ScriptErrUnknown  = "Unknown Redis command called from script"
	ScriptErrArity    = "Wrong number of args calling Redis command from script"
	ScriptErrNoScript = "This Redis command is not allowed from script"
)

// ScriptRefusal is the error text Redis gives when a script calls args (args[0]
// the command name), checked in Redis's own order: unknown command or
// subcommand, arity, noscript. It is "" when none of these refuses the call (ACL,
// OOM, read-only and cluster checks come later and are not judged here).
func ScriptRefusal(args []string) string {
	c, err := Resolve(args)
	switch {
	case err != nil:
		return ScriptErrUnknown
	case !c.ArityOK(len(args)):
		return ScriptErrArity
	case c.Has(FlagNoScript):
		return ScriptErrNoScript
	}
	return ""
}
