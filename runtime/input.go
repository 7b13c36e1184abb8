package runtime

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/runtime/keypart"
	"github.com/redis/go-redis/v9"
)

// Input is one script call's KEYS and ARGV as a generated wrapper builds them:
// Script.Input starts it with room for every key and argument, then one method
// call per key or argument checks the value and appends it. The first refused
// value sticks: later calls append nothing, and Run or Queue returns that error
// without sending anything. Errors name the script and the key position or
// argument, never the value.
//
// An Input is a value meant to live on the wrapper's stack; building one
// allocates its two slices and nothing else (values that Go boxes into an
// interface, such as most int64s, allocate as they would in a hand-written call).
type Input struct {
	script *Script
	prefix string // the deployment prefix every key must carry, for prefixed instances
	// cmd is the whole command, EVALSHA sha numkeys key... arg..., built in one
	// slice so that go-redis sends it as it is (Do) instead of copying keys and
	// arguments into a slice of its own.
	cmd []any
	// strs, for a script made with StringArgs (a rueidis instance's), is the
	// keys and then the arguments as the strings the command sends, which
	// rueidis takes as they are; cmd is then nil. strs is never nil for such a
	// script (make of capacity 0 is not nil) and always nil otherwise: the
	// methods tell the two forms by it.
	strs  []string
	nkeys int
	err   error
}

// cmdHead is the number of cmd's elements before the keys.
const cmdHead = 3

// numkeysArgs are the numkeys arguments as strings, boxed once: a go-redis
// ClusterClient or Ring reads numkeys as a string to find the first key, which
// would format an int on every call.
var numkeysArgs = func() []any {
	out := make([]any, 32)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// Input starts a call of s with room for nkeys keys and nargs arguments.
func (s *Script) Input(nkeys, nargs int) Input {
	if s.stringArgs {
		return Input{script: s, strs: make([]string, 0, nkeys+nargs), nkeys: nkeys}
	}
	return Input{script: s, cmd: s.head(nkeys, nkeys+nargs), nkeys: nkeys}
}

// head is the command's first elements, EVALSHA sha numkeys, with room for n
// keys and arguments more.
func (s *Script) head(nkeys, n int) []any {
	cmd := make([]any, cmdHead, cmdHead+n)
	cmd[0], cmd[1] = s.cmdName, s.shaArg
	if nkeys < len(numkeysArgs) {
		cmd[2] = numkeysArgs[nkeys]
	} else {
		cmd[2] = strconv.Itoa(nkeys)
	}
	return cmd
}

// command is the whole command for go-redis: cmd, or for a StringArgs input
// the head and strs boxed (a rueidis instance's script sent through go-redis,
// e.g. in a Batch).
func (in *Input) command() []any {
	if in.strs == nil {
		return in.cmd
	}
	cmd := in.script.head(in.nkeys, len(in.strs))
	for _, v := range in.strs {
		cmd = append(cmd, v)
	}
	return cmd
}

// keys and args are the Input's keys and arguments (for a Scripter without Do).
func (in *Input) keys() []string {
	if in.strs != nil {
		return in.strs[:in.nkeys]
	}
	keys := make([]string, 0, in.nkeys)
	for _, k := range in.cmd[cmdHead : cmdHead+in.nkeys] {
		keys = append(keys, k.(string))
	}
	return keys
}

func (in *Input) args() []any { return in.command()[cmdHead+in.nkeys:] }

// addString, addInt and addBytes append one key or argument in the Input's
// form: boxed in cmd, or as a string in strs.
func (in *Input) addString(v string) {
	if in.strs != nil {
		in.strs = append(in.strs, v)
		return
	}
	in.cmd = append(in.cmd, v)
}

func (in *Input) addInt(v int64) {
	if in.strs != nil {
		in.strs = append(in.strs, strconv.FormatInt(v, 10))
		return
	}
	in.cmd = append(in.cmd, v)
}

func (in *Input) addBytes(v []byte) {
	if in.strs != nil {
		in.strs = append(in.strs, string(v))
		return
	}
	in.cmd = append(in.cmd, v)
}

// PrefixedInput starts a call of s whose keys must all carry the deployment prefix.
func (s *Script) PrefixedInput(prefix string, nkeys, nargs int) Input {
	in := s.Input(nkeys, nargs)
	in.prefix = prefix
	return in
}

// Err is the first value refused, or nil.
func (in *Input) Err() error { return in.err }

func (in *Input) argErr(arg, reason string) {
	in.err = &ArgError{Script: in.script.name, Arg: arg, Reason: reason}
}

// Key appends the key of KEYS position pos; "" (no key of a type the position
// takes) is refused.
func (in *Input) Key(pos, key string) {
	if in.err != nil {
		return
	}
	if key == "" {
		in.err = missingKey(in.script.name, pos)
		return
	}
	in.addString(key)
}

// PrefixedKey is Key for a key built with deployment prefix owner, which must
// be the Input's.
func (in *Input) PrefixedKey(pos, key, owner string) { in.prefixedKey(pos, key, owner == in.prefix) }

// prefixedKey is Key for a key (or a channel's name) that ofPrefix says is of
// the Input's deployment prefix, refusing it when it is not.
func (in *Input) prefixedKey(pos, key string, ofPrefix bool) {
	if in.err == nil && key != "" && !ofPrefix {
		in.err = wrongPrefix(in.script.name, pos)
		return
	}
	in.Key(pos, key)
}

// KeyArg appends, as an argument, the name of a declared key (an ARGV of type
// key: a prefix the script builds keys from); "" (a zero key) is refused.
func (in *Input) KeyArg(arg, key string) {
	in.nameArg(arg, key, true, "key", "no key: build it with its key builder")
}

// PrefixedKeyArg is KeyArg for a key built with deployment prefix owner, which
// must be the Input's.
func (in *Input) PrefixedKeyArg(arg, key, owner string) {
	in.nameArg(arg, key, owner == in.prefix, "key", "no key: build it with its key builder")
}

// nameArg appends, as an argument, the name of a key or channel (what) that
// ofPrefix says is of the Input's deployment prefix; "" (the zero value) is
// refused with missing, a name of another prefix too.
func (in *Input) nameArg(arg, name string, ofPrefix bool, what, missing string) {
	switch {
	case in.err != nil:
	case name == "":
		in.argErr(arg, missing)
	case !ofPrefix:
		in.argErr(arg, "a "+what+" of another deployment prefix than the one the Scripts were made with")
	default:
		in.addString(name)
	}
}

// Same refuses two keys whose shared placeholder ph (segment i of key a,
// segment j of key b, after the deployment prefix) holds different values.
func (in *Input) Same(ph, a string, i int, b string, j int) {
	if in.err != nil {
		return
	}
	if keySegment(a, len(in.prefix), i) != keySegment(b, len(in.prefix), j) {
		in.err = mismatchedKeys(in.script.name, ph)
	}
}

// accept reports whether the value of argument arg may be appended: nothing
// was refused before it, and ok. A value that is not ok is refused with
// reason(), which runs only then (so that the path of a good value formats
// and allocates nothing).
func (in *Input) accept(arg string, ok bool, reason func() string) bool {
	if in.err != nil {
		return false
	}
	if !ok {
		in.argErr(arg, reason())
	}
	return ok
}

// Int appends an integer argument within min..max.
func (in *Input) Int(arg string, v, min, max int64) {
	if in.accept(arg, v >= min && v <= max, func() string { return fmt.Sprintf("want %d..%d", min, max) }) {
		in.addInt(v)
	}
}

// Bool appends a boolean argument as 1 or 0.
func (in *Input) Bool(v bool) {
	if in.strs != nil {
		in.strs = append(in.strs, boolStrings[b2i(v)])
		return
	}
	in.cmd = append(in.cmd, int64(b2i(v)))
}

// Duration appends a duration within min..max in whole milliseconds
// (truncating any fraction of a millisecond).
func (in *Input) Duration(arg string, d, min, max time.Duration) {
	if in.accept(arg, d >= min && d <= max, func() string { return fmt.Sprintf("want %s..%s", min, max) }) {
		in.addInt(d.Milliseconds())
	}
}

// Millis appends a duration the spec fixes (a declared TTL) in milliseconds.
func (in *Input) Millis(d time.Duration) {
	in.addInt(d.Milliseconds())
}

// String appends a string argument of at most maxBytes bytes.
func (in *Input) String(arg, v string, maxBytes int) {
	if in.accept(arg, len(v) <= maxBytes, func() string { return tooLong(len(v), maxBytes) }) {
		in.addString(v)
	}
}

// Bytes appends a bytes argument of at most maxBytes bytes.
func (in *Input) Bytes(arg string, v []byte, maxBytes int) {
	if in.accept(arg, len(v) <= maxBytes, func() string { return tooLong(len(v), maxBytes) }) {
		in.addBytes(v)
	}
}

func tooLong(n, maxBytes int) string { return fmt.Sprintf("%d bytes, the limit is %d", n, maxBytes) }

// Token appends a random token (owner token, nonce).
func (in *Input) Token(arg, v string) {
	if in.accept(arg, keypart.Token(v), tokenReason) {
		in.addString(v)
	}
}

func tokenReason() string {
	return "want " + strconv.Itoa(keypart.TokenMinLen) + ".." + strconv.Itoa(keypart.TokenMaxLen) + " characters of [A-Za-z0-9_-]"
}

// Hex appends exactly n lower-case hex characters.
func (in *Input) Hex(arg, v string, n int) {
	if in.accept(arg, keypart.Hex(v, n), func() string { return fmt.Sprintf("want %d lower-case hex characters", n) }) {
		in.addString(v)
	}
}

// UUID appends a canonical lower-case UUID.
func (in *Input) UUID(arg, v string) {
	if in.accept(arg, keypart.UUID(v), func() string { return "want a canonical lower-case UUID" }) {
		in.addString(v)
	}
}

// Enum appends v, one value of a declared enum: valid is the enum type's
// Valid (the generated wrapper passes both), so a value outside the enum is
// refused before anything is sent.
func (in *Input) Enum(arg, v string, valid bool) {
	if in.accept(arg, valid, func() string { return "want one of the enum's declared values" }) {
		in.addString(v)
	}
}

// Name appends 1..maxLen characters of [A-Za-z0-9._-].
func (in *Input) Name(arg, v string, maxLen int) {
	if in.accept(arg, keypart.Name(v, maxLen), func() string { return fmt.Sprintf("want 1..%d characters of [A-Za-z0-9._-]", maxLen) }) {
		in.addString(v)
	}
}

// absent appends argAbsent for an optional argument left out and reports
// whether v was nil.
func (in *Input) absent(isNil bool) bool {
	if isNil {
		in.addString(argAbsent)
	}
	return isNil
}

// present refuses the empty value of an optional string or bytes argument.
func (in *Input) present(arg string, n int) bool {
	if in.err == nil && n == 0 {
		in.err = checkPresent(in.script.name, arg, n)
	}
	return in.err == nil
}

// OptInt is Int for an optional argument: nil sends "" (absent).
func (in *Input) OptInt(arg string, v *int64, min, max int64) {
	opt(in, v, func(v int64) { in.Int(arg, v, min, max) })
}

// OptBool is Bool for an optional argument: nil sends "" (absent).
func (in *Input) OptBool(v *bool) { opt(in, v, in.Bool) }

// OptDuration is Duration for an optional argument: nil sends "" (absent).
func (in *Input) OptDuration(arg string, d *time.Duration, min, max time.Duration) {
	opt(in, d, func(d time.Duration) { in.Duration(arg, d, min, max) })
}

// OptString is String for an optional argument: nil sends "" (absent), and a
// present value must not be empty.
func (in *Input) OptString(arg string, v *string, maxBytes int) {
	if !in.absent(v == nil) && in.present(arg, len(*v)) {
		in.String(arg, *v, maxBytes)
	}
}

// OptBytes is Bytes for an optional argument: nil sends "" (absent), and a
// present value must not be empty.
func (in *Input) OptBytes(arg string, v []byte, maxBytes int) {
	if !in.absent(v == nil) && in.present(arg, len(v)) {
		in.Bytes(arg, v, maxBytes)
	}
}

// OptToken is Token for an optional argument: nil sends "" (absent).
func (in *Input) OptToken(arg string, v *string) {
	opt(in, v, func(v string) { in.Token(arg, v) })
}

// OptHex is Hex for an optional argument: nil sends "" (absent).
func (in *Input) OptHex(arg string, v *string, n int) {
	opt(in, v, func(v string) { in.Hex(arg, v, n) })
}

// OptUUID is UUID for an optional argument: nil sends "" (absent).
func (in *Input) OptUUID(arg string, v *string) {
	opt(in, v, func(v string) { in.UUID(arg, v) })
}

// OptName is Name for an optional argument: nil sends "" (absent).
func (in *Input) OptName(arg string, v *string, maxLen int) {
	opt(in, v, func(v string) { in.Name(arg, v, maxLen) })
}

// opt is what the Opt methods share: nil appends argAbsent, a value is
// appended by add (the method of the argument's type).
func opt[T any](in *Input, v *T, add func(T)) {
	if !in.absent(v == nil) {
		add(*v)
	}
}

// Backend runs built calls on the client of one database. The go-redis
// adapter (Bind) is the default; runtime/rueidisbackend is the other. An
// adapter sends the call as EVALSHA (EVALSHA_RO when the script is read-only)
// and recovers NOSCRIPT (Script.LoadOnce), sends nothing when ctx has ended,
// returns when ctx ends, never sends again a script that is not Replayable,
// and returns the reply as go-redis decodes it (int64, string, []any, nil; an
// array may be a Values instead of a []any, which generated decoders read
// alike) or a *ScriptError, an OutcomeUnknownError or another error.
type Backend interface {
	Run(ctx context.Context, in Input) (any, error)
}

// Observer sees every call a generated wrapper sends: its script, how long it
// took and its error (nil, a *ScriptError, an OutcomeUnknownError, ...).
// runtime/scriptmetrics makes one that exports Prometheus metrics. A generated
// Clients takes one in its Observer field; without one (the default) nothing
// is measured.
type Observer interface {
	ObserveCall(s *Script, took time.Duration, err error)
}

// DB is one database's Backend as generated Scripts hold it, with the name
// errors give the database (e.g. "app db0") and its Observer, if any.
type DB struct {
	b    Backend
	name string
	obs  Observer
}

// goRedis is the go-redis adapter.
type goRedis struct{ c redis.Scripter }

func (g goRedis) Run(ctx context.Context, in Input) (any, error) {
	return in.script.runInput(ctx, g.c, &in)
}

// Bind makes the DB of a generated Scripts on a go-redis client: c may be nil
// (a wrapper of that database then answers ErrNoClient); otherwise it must
// select database index where the client can tell (CheckDB).
// obs may be nil.
func Bind(c redis.Scripter, name string, index int, obs Observer) (DB, error) {
	if c == nil {
		return DB{name: name, obs: obs}, nil
	}
	if err := CheckDB(c, index); err != nil {
		return DB{}, fmt.Errorf("%s: %w", name, err)
	}
	return DB{b: goRedis{c}, name: name, obs: obs}, nil
}

// BindBackend makes the DB of a generated Scripts on another Backend, which
// has checked its database already; b and obs may be nil.
func BindBackend(b Backend, name string, obs Observer) DB { return DB{b: b, name: name, obs: obs} }

// Run is what a generated wrapper's body calls: it refuses a database without a
// client and a refused Input without sending anything, runs the script on the
// database's Backend and decodes the reply.
func Run[T any](ctx context.Context, db DB, in Input, decode func(any) (T, error)) (T, error) {
	var zero T
	if db.b == nil {
		return zero, fmt.Errorf("script %s: %s: %w", in.script.name, db.name, ErrNoClient)
	}
	if in.err != nil {
		return zero, in.err
	}
	var v any
	var err error
	if db.obs == nil {
		v, err = db.b.Run(ctx, in)
	} else {
		start := time.Now()
		v, err = db.b.Run(ctx, in)
		db.obs.ObserveCall(in.script, time.Since(start), err)
	}
	if err != nil {
		return zero, err
	}
	return decode(v)
}

// Script is the script the call runs.
func (in *Input) Script() *Script { return in.script }

// NumKeys is the number of keys of the call.
func (in *Input) NumKeys() int { return in.nkeys }

// arg is the i-th of the call's keys and then arguments (0 is KEYS[1]): a
// string, an int64 or a []byte (always a string for a StringArgs script).
func (in *Input) arg(i int) any {
	if in.strs != nil {
		return in.strs[i]
	}
	return in.cmd[cmdHead+i]
}

// numArgs is the number of keys and arguments.
func (in *Input) numArgs() int {
	if in.strs != nil {
		return len(in.strs)
	}
	return len(in.cmd) - cmdHead
}

// Strings are the call's keys and then arguments as the strings the command
// sends, for a backend that sends strings (rueidis): for a StringArgs script
// the Input's own slice, which the caller must not modify; otherwise a new one.
func (in *Input) Strings() []string {
	if in.strs != nil {
		return in.strs
	}
	out := make([]string, 0, in.numArgs())
	for _, v := range in.cmd[cmdHead:] {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case int64:
			out = append(out, strconv.FormatInt(v, 10))
		case []byte:
			out = append(out, string(v))
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// boolStrings are Bool's arguments as strings.
var boolStrings = [2]string{"0", "1"}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// The errors of Input's refusals.

// missingKey is the error of a wrapper given no key for a KEYS position: nil, a
// zero value, or a value that is not one of the position's key types (a pointer,
// another type embedding one).
func missingKey(script, position string) error {
	return &ArgError{Script: script, Arg: "KEYS " + position, Reason: "no key of a type this position takes (build it with its key builder)"}
}

// wrongPrefix is the error of a wrapper given a key of another deployment.
func wrongPrefix(script, position string) error {
	return &ArgError{Script: script, Arg: "KEYS " + position, Reason: "a key of another deployment prefix than the one the Scripts were made with"}
}

// keySegment is the i-th ':'-separated segment of key after its first skip
// bytes (a deployment prefix), without the braces of a hash tag; "" when the
// key has fewer segments. Same compares shared placeholders with it.
func keySegment(key string, skip, i int) string {
	if skip > len(key) {
		return ""
	}
	rest := key[skip:]
	for ; i > 0; i-- {
		j := strings.IndexByte(rest, ':')
		if j < 0 {
			return ""
		}
		rest = rest[j+1:]
	}
	if j := strings.IndexByte(rest, ':'); j >= 0 {
		rest = rest[:j]
	}
	if len(rest) >= 2 && rest[0] == '{' && rest[len(rest)-1] == '}' {
		rest = rest[1 : len(rest)-1]
	}
	return rest
}

// mismatchedKeys is the error of a wrapper given keys whose shared placeholder
// differs (a session's data key and another session's lock).
func mismatchedKeys(script, placeholder string) error {
	return &ArgError{Script: script, Arg: "KEYS {" + placeholder + "}", Reason: "the keys hold different values of a placeholder the script's keys share"}
}

// checkPresent refuses the empty value of an optional string or bytes argument
// that is present: the empty string is how a wrapper says the argument is absent.
func checkPresent(script, arg string, n int) error {
	if n == 0 {
		return &ArgError{Script: script, Arg: arg, Reason: "empty: an optional argument is absent (nil) or non-empty"}
	}
	return nil
}

// argAbsent is what a wrapper sends for an optional argument left out; the
// script tells with ARGV[n] == "".
const argAbsent = ""
