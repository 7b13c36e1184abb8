// Package compiler is the stage between the spec and the code: it reads the Lua of
// every live script of a parsed spec and checks it against the script's declared
// signature (the file exists, Redis's Lua accepts it, it reads exactly the KEYS and
// ARGV it declares, read-only scripts write nothing, error replies are declared)
// and against Redis's own command table (gen/rediscmd): every command is one Redis
// knows and allows in scripts, every key position of every call is filled from
// KEYS, KEYS stays read-only, nothing reaches another database or switches
// replication off. It also holds the script to what the spec declares of its
// keys and channels (ttl.go: expiries and bounds; channels.go: PUBLISH targets;
// positions.go: repeating and unused positions) and flattens shared Lua
// (include.go) before any of this. Code generation, lint and ACL derivation all
// start from what it returns, so nothing any of them produces rests on a script
// it refuses.
package compiler

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	"github.com/hanchat/luagen/gen/rediscmd"
)

// Source is the Lua of one live script, read and checked against its signature.
type Source struct {
	Script *keyspec.Script
	// Src is the script as Redis runs it: its file with every include
	// directive replaced by the file it names (Position maps a line back).
	Src  []byte
	Info *luascript.Info
	SHA1 string
	// Commands are the commands and subcommands its calls run, one per entry of
	// Info.Calls, from Redis's command table ("get", "object|encoding").
	Commands []*rediscmd.Command
	// Resolved are the key arguments of its calls and the channels it builds,
	// each with the declared keys (or channels) it was proven to be.
	Resolved []Resolved
	// Unproven are what the static reading could not tell of the script's
	// keys (RuleTTLUnproven, RuleBoundUnproven): luagen lint reports them,
	// generate accepts the script, and the harness checks them at run time.
	Unproven []Problem

	flat *flattened
}

// Problem is one thing Check refuses, with the lint rule that names its kind.
type Problem struct {
	Err  *keyspec.Error
	Rule string
}

// The rules of the problems Check finds, as lint reports them.
const (
	RuleSignature     = "lua"               // the Lua does not load, or does not match its signature
	RuleDynamicCmd    = "dynamic-command"   // redis.call whose command (or subcommand) is not a literal
	RuleUnknownCmd    = "unknown-command"   // a command or subcommand Redis does not have
	RuleNoScript      = "noscript"          // a command Redis refuses inside scripts
	RuleDangerous     = "dangerous-command" // a command no generated ACL grants (admin, @dangerous, @scripting)
	RuleKeyless       = "keyless-command"   // a command on the whole server or database rather than on KEYS
	RuleScriptSelect  = "script-select"     // SELECT in a script
	RuleCrossDB       = "cross-db"          // MOVE, SWAPDB, COPY ... DB n
	RuleArity         = "arity"             // a literal call with a number of arguments Redis refuses
	RuleScriptKey     = "script-key"        // a key position not filled from KEYS, or not known before the call runs
	RuleScriptChannel = "script-channel"    // a channel built by the script that no derived channel of it matches
	RuleShebang       = "shebang"           // a shebang flag that lifts a server protection (allow-oom)
	RuleKeysWrite     = luascript.UnsafeKeysWrite
	RuleArgvWrite     = luascript.UnsafeArgvWrite
	RuleShadow        = luascript.UnsafeShadow
	RuleReplication   = luascript.UnsafeReplication
)

// keylessAllowed are the commands taking no key that a script may call: the
// clock, liveness, and publishing (whose channels the ACL's channel patterns
// confine). Any other keyless command reads or changes the server or the whole
// database, not the keys the caller passed.
var keylessAllowed = map[string]bool{"time": true, "ping": true, "echo": true, "publish": true, "spublish": true}

// Load reads the Lua of every live script from lua (rooted at the Lua
// directory) and checks it against the spec: the file exists, Redis's Lua accepts
// it, it reads exactly the KEYS and ARGV positions the spec declares, and a
// read-only script says no-writes and calls no write command. A .lua file no spec
// entry declares is an error too. Every problem found is returned as a
// keyspec.List that names file and line.
func Load(spec *keyspec.Spec, lua fs.FS, luaDir string) (map[string]*Source, error) {
	srcs, problems := Check(spec, lua, luaDir)
	if len(problems) > 0 {
		return nil, problemErrors(problems)
	}
	return srcs, nil
}

// MaxScriptBytes is the largest Lua file luagen reads for one script: 64 KiB,
// twenty times the largest script of a real service (about 3 KiB).
const MaxScriptBytes = 64 << 10

// outOfTree says why file (instance/name.lua under the lua directory) is not
// read: a symbolic link anywhere on its way (the instance directory or the file),
// which may point out of the tree and would embed its target in the generated
// Go, or a file that is not regular (a FIFO, a device). "" when it may be read,
// or when it does not exist (reading it reports that).
func outOfTree(lua fs.FS, file string) string {
	parts := strings.Split(file, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := fs.Lstat(lua, p)
		if err != nil {
			return ""
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Sprintf("%s is a symbolic link: luagen reads only regular files inside the lua directory (a link may point out of the tree, and its target would be embedded in the generated Go)", p)
		case i == len(parts)-1 && !fi.Mode().IsRegular():
			return fmt.Sprintf("not a regular file (%s)", fi.Mode().Type())
		}
	}
	return ""
}

// badText is the line and description of the first byte of src that is not
// UTF-8 or is a control character other than tab, CR and LF; "" when none is.
func badText(src []byte) (int, string) {
	line := 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, fmt.Sprintf("byte 0x%02x is not UTF-8", src[i])
		case r == '\n':
			line++
		case r == '\t' || r == '\r':
		case r < 0x20 || r == 0x7f || unicode.Is(unicode.Bidi_Control, r):
			return line, fmt.Sprintf("control character %U", r)
		}
		i += size
	}
	return 0, ""
}

// Check is Load returning every problem with its rule, and the sources of the
// scripts it could read (also when there are problems), for lint.
func Check(spec *keyspec.Spec, lua fs.FS, luaDir string) (map[string]*Source, []Problem) {
	if luaDir == "" {
		luaDir = "lua"
	}
	var errs []Problem
	add := func(rule string, e *keyspec.Error) { errs = append(errs, Problem{Err: e, Rule: rule}) }
	out := map[string]*Source{}
	declared := map[string]bool{}
	// Each script is read and flattened in order, analyzed (the costly part,
	// and independent per script) on every processor, then checked in order,
	// so the problems come out as a sequential reading gives them.
	type job struct {
		s       *keyspec.Script
		display string
		pre     []Problem // what stopped the script before its analysis
		flat    *flattened
		info    *luascript.Info
		err     error
	}
	var jobs []*job
	for _, s := range spec.Scripts {
		declared[s.LuaFile()] = true
		if !s.Live() {
			continue
		}
		j := &job{s: s, display: path.Join(luaDir, s.LuaFile())}
		jobs = append(jobs, j)
		display := j.display
		pre := func(rule string, e *keyspec.Error) { j.pre = append(j.pre, Problem{Err: e, Rule: rule}) }
		if why := outOfTree(lua, s.LuaFile()); why != "" {
			pre(RuleSignature, &keyspec.Error{Pos: s.Pos, Entry: fmt.Sprintf("script %q", s.Name), Msg: display + ": " + why})
			continue
		}
		src, err := fs.ReadFile(lua, s.LuaFile())
		if err != nil {
			msg := fmt.Sprintf("%s: cannot read: %v", display, err)
			if errors.Is(err, fs.ErrNotExist) {
				msg = display + ": file not found"
			}
			pre(RuleSignature, &keyspec.Error{Pos: s.Pos, Entry: fmt.Sprintf("script %q", s.Name), Msg: msg})
			continue
		}
		if len(src) > MaxScriptBytes {
			pre(RuleSignature, &keyspec.Error{Pos: s.Pos, Entry: fmt.Sprintf("script %q", s.Name), Msg: fmt.Sprintf("%s: %d bytes, over luagen's cap of %d for one script (a script runs atomically: keep it small)", display, len(src), MaxScriptBytes)})
			continue
		}
		if line, what := badText(src); what != "" {
			pre(RuleSignature, &keyspec.Error{Pos: keyspec.Pos{File: display, Line: line}, Msg: what + ": a script is UTF-8 text without control characters (a tab aside)"})
			continue
		}
		flat, problems := flatten(lua, luaDir, s.LuaFile(), src)
		if len(problems) > 0 {
			j.pre = append(j.pre, problems...)
			continue
		}
		for _, f := range flat.files {
			declared[f] = true
		}
		j.flat = flat
	}
	analyze := func(j *job) { j.info, j.err = luascript.Analyze(j.display, j.flat.src) }
	var todo []*job
	for _, j := range jobs {
		if j.flat != nil {
			todo = append(todo, j)
		}
	}
	if workers := min(runtime.GOMAXPROCS(0), len(todo)/8); workers > 1 {
		next := make(chan *job)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range next {
					analyze(j)
				}
			}()
		}
		for _, j := range todo {
			next <- j
		}
		close(next)
		wg.Wait()
	} else {
		for _, j := range todo {
			analyze(j)
		}
	}
	for _, j := range jobs {
		errs = append(errs, j.pre...)
		if j.flat == nil {
			continue
		}
		s, display, flat, info, err := j.s, j.display, j.flat, j.info, j.err
		if err != nil {
			var se *luascript.SyntaxError
			if errors.As(err, &se) {
				add(RuleSignature, &keyspec.Error{Pos: flat.origin(display, keyspec.Pos{File: se.File, Line: se.Line}), Msg: se.Msg})
			} else {
				add(RuleSignature, &keyspec.Error{Pos: keyspec.Pos{File: display, Line: 1}, Msg: err.Error()})
			}
			continue
		}
		sum := sha1.Sum(flat.src)
		problems, cmds, resolved := check(s, info, display)
		remap(flat, display, problems)
		errs = append(errs, problems...)
		_, unproven := checkTTLs(s, info, cmds, display)
		remap(flat, display, unproven)
		if s.Instance.Functions() {
			if p := functionBodyProblem(display, flat.src); p != nil {
				remap(flat, display, []Problem{*p})
				errs = append(errs, *p)
			}
		}
		out[s.ID] = &Source{Script: s, Src: flat.src, Info: info, SHA1: hex.EncodeToString(sum[:]), Commands: cmds, Resolved: resolved, Unproven: unproven, flat: flat}
	}
	for _, in := range spec.Instances {
		entries, err := fs.ReadDir(lua, in.Name)
		if err != nil {
			continue // no directory: every declared script was reported missing above
		}
		for _, e := range entries {
			file := in.Name + "/" + e.Name()
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".lua") || declared[file] {
				continue
			}
			add(RuleSignature, &keyspec.Error{Pos: keyspec.Pos{File: path.Join(luaDir, file), Line: 1}, Msg: undeclared(spec, in, strings.TrimSuffix(e.Name(), ".lua"))})
		}
	}
	return out, errs
}

// undeclared is the message of a script file of instance in that no entry of
// spec declares: where to declare it, and how.
func undeclared(spec *keyspec.Spec, in *keyspec.Instance, name string) string {
	where := fmt.Sprintf("under scripts: (%s:%d)", spec.File, spec.ScriptsLine)
	if spec.ScriptsLine == 0 {
		where = "in a scripts: section"
	}
	return fmt.Sprintf("script %q is not declared in %s: declare it %s as an entry %s.%s (or %s with instance: %s) with its keys, argv and reply (docs/keyspec.md, Scripts), or remove the file",
		name, spec.File, where, in.Name, name, name, in.Name)
}

// Recheck reads the script's source again and runs Load's checks on it,
// returning the command each call runs, in the order of its calls, or what the
// checks refuse. Whoever derives something from a Source (the ACL) calls it, so
// a Source that did not come from Load, or was changed since, grants nothing
// Load would refuse. It does not change src.
func (src *Source) Recheck() ([]*rediscmd.Command, error) {
	if src == nil || src.Script == nil || src.Info == nil {
		return nil, errors.New("compiler: an incomplete Source")
	}
	display := src.Info.File
	info, err := luascript.Analyze(display, src.Src)
	if err != nil {
		return nil, err
	}
	problems, cmds, _ := check(src.Script, info, display)
	remap(src.flat, display, problems)
	if len(problems) > 0 {
		return nil, problemErrors(problems)
	}
	return cmds, nil
}

// problemErrors is the errors of problems, as one keyspec.List.
func problemErrors(problems []Problem) keyspec.List {
	errs := make(keyspec.List, len(problems))
	for i, p := range problems {
		errs[i] = p.Err
	}
	return errs
}

// check checks a script against its signature and its calls against Redis's
// command table.
func check(s *keyspec.Script, info *luascript.Info, display string) ([]Problem, []*rediscmd.Command, []Resolved) {
	expandEnums(s, info)
	errs := checkSignature(s, info, display)
	calls, cmds, resolved := checkCalls(s, info, display)
	errs = append(errs, calls...)
	errs = append(errs, checkChannels(s, info, cmds, resolved, display)...)
	ttl, _ := checkTTLs(s, info, cmds, display)
	errs = append(errs, ttl...)
	errs = append(errs, checkDerivedUse(s, resolved, display)...)
	return errs, cmds, resolved
}

// checkDerivedUse: every derived key or channel a script declares is one it
// builds (the ACL and the harness grant what it declares).
func checkDerivedUse(s *keyspec.Script, resolved []Resolved, display string) []Problem {
	used := map[*keyspec.Derived]bool{}
	for _, r := range resolved {
		for _, d := range r.Derived {
			used[d] = true
		}
	}
	var out []Problem
	for _, d := range s.Derived {
		if !used[d] {
			what := "key"
			if d.Channel != nil {
				what = "channel"
			}
			out = append(out, Problem{Rule: RuleSignature, Err: &keyspec.Error{Pos: d.Pos, Entry: fmt.Sprintf("script %q derived %s %q", s.Name, what, d.Name()), Msg: display + " never builds it"}})
		}
	}
	return out
}

func checkSignature(s *keyspec.Script, info *luascript.Info, display string) []Problem {
	var errs []Problem
	add := func(rule string, e *keyspec.Error) { errs = append(errs, Problem{Err: e, Rule: rule}) }
	entry := fmt.Sprintf("script %q", s.Name)
	at := func(line int) keyspec.Pos { return keyspec.Pos{File: display, Line: line} }
	errs = append(errs, checkPositions(s, info, display)...)
	noWrites := info.HasFlag("no-writes")
	switch {
	case s.ReadOnly && !noWrites:
		add(RuleSignature, &keyspec.Error{Pos: s.Pos, Entry: entry, Msg: fmt.Sprintf("read_only, but %s does not start with #!lua flags=no-writes", display)})
	case !s.ReadOnly && noWrites:
		add(RuleSignature, &keyspec.Error{Pos: s.Pos, Entry: entry, Msg: fmt.Sprintf("%s says flags=no-writes; declare read_only: true", display)})
	}
	for _, d := range info.Dynamic {
		add(RuleSignature, &keyspec.Error{Pos: at(d.Line), Msg: fmt.Sprintf("%s: the static reading cannot follow it, and the ACL, read-only and key checks rest on that reading", d.What)})
	}
	for _, u := range info.Unsafe {
		add(u.Rule, &keyspec.Error{Pos: at(u.Line), Msg: u.Msg})
	}
	if info.HasFlag("allow-oom") {
		add(RuleShebang, &keyspec.Error{Pos: at(1), Msg: "shebang flag allow-oom lets the script run write commands when Redis is out of memory and refuses them to every client: remove it (let the write fail, and the caller degrade)"})
	}
	declared := map[string]bool{}
	for _, e := range s.Errors {
		declared[e.Code] = true
	}
	used := map[string]bool{}
	for _, r := range info.Errors {
		switch {
		case r.Code == "":
			add(RuleSignature, &keyspec.Error{Pos: at(r.Line), Msg: "redis.error_reply without a literal 'CODE message': callers match errors by their declared code"})
		case !declared[r.Code]:
			add(RuleSignature, &keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("error reply %s is not declared under %s's errors", r.Code, entry)})
		}
		used[r.Code] = true
	}
	for _, e := range s.Errors {
		if !used[e.Code] {
			add(RuleSignature, &keyspec.Error{Pos: e.Pos, Entry: entry, Msg: fmt.Sprintf("declares error %s, which %s never replies", e.Code, display)})
		}
	}
	return errs
}
