// Package luascript reads a Lua script the way Redis will before it runs it: the
// shebang line and its flags, the syntax Redis's Lua 5.1 accepts, the Redis commands
// the script calls, the KEYS and ARGV positions it reads, and the globals it uses.
// The generator, the linter and the test harness share this reading.
package luascript

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/yuin/gopher-lua/parse"
)

// ErrSyntax is what a script Redis would refuse to load matches with errors.Is.
var ErrSyntax = errors.New("lua syntax error")

// SyntaxError is a script Redis would refuse to load.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Is makes a SyntaxError match ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// Info is what a static reading of one script finds.
type Info struct {
	File    string
	Shebang bool      // the script starts with "#!lua"
	Flags   []string  // shebang flags, e.g. no-writes
	Calls   []Call    // every redis.call / redis.pcall as the script may run it, in the order the reading meets them
	Keys    []Ref     // every KEYS[...] read
	Argv    []Ref     // every ARGV[...] read
	Globals []Global  // every global name read or written that Redis does not provide
	Dynamic []Dynamic // code the static reading cannot follow (redis aliased, loadstring, _G, recursion, ...)
	Errors  []Ref     // every redis.error_reply('CODE ...') literal; Code holds its first word
	// Unsafe are uses that would undo what the reading rests on: KEYS or ARGV
	// written or handed to code that may change them, redis/KEYS/ARGV shadowed
	// or assigned, replication switched off.
	Unsafe []Unsafe
	// Strings are the script's string literals, in source order.
	Strings []Literal
	// Numeric are the ARGV positions the script converts with tonumber or
	// computes with (arithmetic, math functions), with the line of the first such use.
	Numeric []Ref
	// Returns are the kinds of value the script may reply (its main chunk's
	// first return value): "nil", "bool", "number", "string", "table",
	// "error" (redis.error_reply), "status", "reply" (a command's reply
	// passed on), "value" (a value the reading cannot name); sorted.
	Returns []string
}

// Literal is one string literal of the script.
type Literal struct {
	Line int
	Text string
}

// Unsafe is one use of the script that would undo the reading's guarantees.
type Unsafe struct {
	Line int
	Rule string // UnsafeKeysWrite, UnsafeArgvWrite, UnsafeShadow or UnsafeReplication
	Msg  string // what it is and what to do instead
}

// The kinds of Unsafe.
const (
	UnsafeKeysWrite   = "keys-read-only" // KEYS assigned, or passed where it may be changed
	UnsafeArgvWrite   = "argv-read-only" // ARGV assigned, or passed where it may be changed
	UnsafeShadow      = "shadow"         // a local, parameter or assignment replacing redis, KEYS or ARGV
	UnsafeReplication = "replication"    // redis.set_repl
)

// Dynamic is a use the static reading cannot follow, which could call any
// command on any key: redis used other than through redis.call, redis.pcall
// (or a local alias of them) and its known fields, loadstring/load, _G,
// rawget/rawset, a helper that calls itself, a function value it cannot name.
type Dynamic struct {
	Line int
	What string
}

// Call is one redis.call or redis.pcall, once for each command name it may run
// and each helper call it is reached through.
type Call struct {
	Line     int
	Fn       string // "call" or "pcall"
	Command  string // lower-cased command name; "" when not a string literal
	Keys     []int  // KEYS positions (1-based) among its arguments: KEYS[n], or a local alias of KEYS[n]
	FirstKey int    // the KEYS position of its first argument after the command, 0 when it is not exactly one
	NArgs    int    // arguments after the command
	// Args are all its arguments, the command's name first, as the reading sees them.
	Args []Arg
	// Literals are the arguments after the command, lower-cased when they are
	// string literals and "" otherwise (XADD ... MAXLEN shows as "maxlen").
	Literals []string
	// Via are the calls of the script's own functions this call is reached
	// through, outermost first; empty for a call in the main chunk.
	Via []Site
	// Choice is non-empty when the command name is one of several literals
	// (local cmd = lifo and 'RPUSH' or 'LPUSH'): all of them, lower-cased.
	Choice []string
}

// Site is a call of one of the script's own functions.
type Site struct {
	Line int
	Func string // how messages name it: "helper touch", "a function (line 4)"
}

// ArgKind is what the static reading knows of one argument of redis.call.
type ArgKind int

// The kinds of argument.
const (
	ArgOther   ArgKind = iota // a value the reading does not know, or several: Alts
	ArgString                 // a string literal: Text
	ArgInteger                // an integer literal: Text, in decimal as Redis receives it
	ArgNumber                 // a number whose value is not known (arithmetic, tonumber, #t): never a keyword
	ArgKey                    // KEYS[Key] in every alternative (Key 0: an index that is not a literal, or several positions: KeyAlts)
	ArgArgv                   // ARGV[Argv] (Argv 0: an index that is not a literal)
	ArgSpread                 // the last argument, expanding to any number of values: unpack(t), f(...), ...
)

// Arg is one argument of a redis.call.
type Arg struct {
	Kind ArgKind
	Text string // ArgString, ArgInteger
	Key  int    // ArgKey
	Argv int    // ArgArgv
	// ArgvMin, on an ArgArgv of a position the reading cannot tell (Argv 0),
	// is the least position it may be (ARGV[i] in for i = 2, #ARGV); 0 or 1:
	// any.
	ArgvMin int
	Desc    string // how messages name it: "ARGV[1]", "'app:x'", "local k (reassigned at line 7)", "an expression"
	// Alts are the strings the argument may be (numbers as a PartNumber); for a
	// spread, the values each of its elements may be. Values Redis refuses as
	// arguments (nil, booleans, tables) are left out.
	Alts []Str
	// KeyAlts are the KEYS positions of an ArgKey (0: any position).
	KeyAlts []int
	// KeysFrom, on a spread, is n when it is exactly KEYS[n], KEYS[n+1], ...
	// up to the last KEYS (unpack(KEYS), unpack(KEYS, n)).
	KeysFrom int
}

// Ref is one KEYS[i] or ARGV[i] read (Index is 0 when i is not a number literal),
// or one error_reply code (Code).
type Ref struct {
	Line  int
	Index int
	Code  string
}

// Global is a global variable a script uses that Redis does not provide. Redis 7
// refuses to create globals and errors on reading unknown ones.
type Global struct {
	Line  int
	Name  string
	Write bool
}

// HasFlag reports whether the shebang declares flag.
func (in *Info) HasFlag(flag string) bool { return slices.Contains(in.Flags, flag) }

// Commands lists the distinct commands the script calls by literal name, sorted.
func (in *Info) Commands() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range in.Calls {
		if c.Command != "" && !seen[c.Command] {
			seen[c.Command] = true
			out = append(out, c.Command)
		}
	}
	sort.Strings(out)
	return out
}

// MaxKey is the highest KEYS position read by literal index.
func (in *Info) MaxKey() int { return maxIndex(in.Keys) }

// MaxArg is the highest ARGV position read by literal index.
func (in *Info) MaxArg() int { return maxIndex(in.Argv) }

func maxIndex(refs []Ref) int {
	m := 0
	for _, r := range refs {
		m = max(m, r.Index)
	}
	return m
}

var shebangRe = regexp.MustCompile(`^#!lua(?:\s+(.*))?$`)

// Body returns the source Lua itself parses: the shebang line, which Redis strips
// before compiling, becomes an empty line so line numbers stay the same.
func Body(src []byte) []byte {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return src
	}
	if i := bytes.IndexByte(src, '\n'); i >= 0 {
		return src[i:]
	}
	return nil
}

// Analyze reads one script. file names it in errors ("app/rate_limit.lua").
func Analyze(file string, src []byte) (*Info, error) {
	info := &Info{File: file}
	if bytes.HasPrefix(src, []byte("#!")) {
		first, _, _ := bytes.Cut(src, []byte("\n"))
		m := shebangRe.FindSubmatch(bytes.TrimRight(first, "\r"))
		if m == nil {
			return nil, &SyntaxError{File: file, Line: 1, Msg: "shebang must be #!lua [flags=...] (Redis knows no other engine)"}
		}
		info.Shebang = true
		for _, opt := range strings.Fields(string(m[1])) {
			flags, ok := strings.CutPrefix(opt, "flags=")
			if !ok {
				return nil, &SyntaxError{File: file, Line: 1, Msg: fmt.Sprintf("shebang option %q: Redis knows only flags=", opt)}
			}
			for _, f := range strings.Split(flags, ",") {
				if !knownFlags[f] {
					return nil, &SyntaxError{File: file, Line: 1, Msg: fmt.Sprintf("shebang flag %q: Redis knows no-writes, allow-oom, allow-stale, no-cluster, allow-cross-slot-keys", f)}
				}
				info.Flags = append(info.Flags, f)
			}
		}
	}
	chunk, err := parse.Parse(bytes.NewReader(Body(src)), file)
	if err != nil {
		return nil, syntaxError(file, err, bytes.Count(src, []byte("\n"))+1)
	}
	sx := &syntax{info: info}
	sx.push()
	sx.block(chunk)
	if sx.err != nil {
		return nil, sx.err
	}
	flow(info, chunk)
	return info, nil
}

var knownFlags = map[string]bool{"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true}

// syntaxError is gopher-lua's parse error as file:line: message, the line
// once: "near 'end' (column 5): syntax error", or "at the end of the script:
// syntax error" (gopher-lua's own text repeats the file and the line, as
// "a.lua line:3(column:5) near 'end':   syntax error").
func syntaxError(file string, err error, lastLine int) error {
	var pe *parse.Error
	if !errors.As(err, &pe) {
		return &SyntaxError{File: file, Line: 1, Msg: strings.TrimSpace(strings.TrimPrefix(err.Error(), file+" "))}
	}
	msg := strings.TrimSpace(pe.Message)
	if pe.Pos.Line == parse.EOF {
		return &SyntaxError{File: file, Line: lastLine, Msg: "at the end of the script: " + msg + " (a block, string or bracket left open?)"}
	}
	near := ""
	if pe.Token != "" {
		near = fmt.Sprintf(" near %q", pe.Token)
	}
	line, column := pe.Pos.Line, ""
	if pe.Pos.Column > 0 {
		column = fmt.Sprintf(" (column %d)", pe.Pos.Column)
	} else if line > 1 {
		line-- // column 0: the scanner has just read the newline ending the line at fault (an unterminated string)
	}
	return &SyntaxError{File: file, Line: max(line, 1), Msg: msg + near + column}
}

// Provided are the globals Redis 7 gives a script (pairs(_G) in a script on
// Redis 7.0.15, less its error handler).
var Provided = map[string]bool{
	"redis": true, "KEYS": true, "ARGV": true, "_G": true, "_VERSION": true,
	"string": true, "table": true, "math": true, "cjson": true, "cmsgpack": true, "bit": true, "struct": true,
	"assert": true, "error": true, "getmetatable": true, "ipairs": true, "next": true, "pairs": true,
	"pcall": true, "rawequal": true, "rawget": true, "rawset": true, "select": true, "setmetatable": true,
	"tonumber": true, "tostring": true, "type": true, "unpack": true, "xpcall": true, "gcinfo": true,
	"coroutine": true, "collectgarbage": true,
}

// redisFields are the fields of the redis table a script may use as values.
var redisFields = map[string]bool{
	"error_reply": true, "status_reply": true, "sha1hex": true, "log": true, "setresp": true, "set_repl": true,
	"replicate_commands": true, "breakpoint": true, "debug": true, "acl_check_cmd": true,
	"LOG_DEBUG": true, "LOG_VERBOSE": true, "LOG_NOTICE": true, "LOG_WARNING": true,
	"REPL_ALL": true, "REPL_AOF": true, "REPL_REPLICA": true, "REPL_SLAVE": true, "REPL_NONE": true,
	"REDIS_VERSION": true, "REDIS_VERSION_NUM": true,
}
