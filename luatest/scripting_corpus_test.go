package luatest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The Lua-semantics cases of Redis 7.0.15's own scripting test suite
// (tests/unit/scripting.tcl, kept in testdata/redis-7.0.15 with Redis's
// licence), extracted by code into testdata/scripting_corpus.json: for each
// test, the scripts it runs (source, KEYS, ARGV) and the plain commands around
// them, in order. Tests that need more than single script calls on one
// connection (several clients, blocking, busy scripts, replication, server
// configuration, DEBUG, MULTI, the script cache, functions) are kept in the
// corpus with the reason they are excluded. TestConformanceScriptingTcl runs
// every included case on a redis-server and on the harness and compares every
// reply and the resulting keyspace.

var update = flag.Bool("update", false, "rewrite golden files in testdata from their sources")

const (
	scriptingTcl    = "testdata/redis-7.0.15/scripting.tcl"
	scriptingCorpus = "testdata/scripting_corpus.json"
)

type corpusCase struct {
	Name     string       `json:"name"`
	Line     int          `json:"line"`
	Excluded string       `json:"excluded,omitempty"`
	Steps    []corpusStep `json:"steps,omitempty"`
}

type corpusStep struct {
	Line     int      `json:"line"`
	Script   *string  `json:"script,omitempty"`
	ReadOnly bool     `json:"read_only,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Args     []string `json:"args,omitempty"`
	Command  []string `json:"command,omitempty"`
}

// extractCorpus reads scripting.tcl into cases.
func extractCorpus(src string) ([]corpusCase, error) {
	cmds, err := parseTcl(src, 1)
	if err != nil {
		return nil, err
	}
	x := &corpusExtractor{names: map[string]int{}}
	if err := x.walk(cmds, ""); err != nil {
		return nil, err
	}
	return x.cases, nil
}

type corpusExtractor struct {
	cases []corpusCase
	names map[string]int
}

func wordText(w tclWord) string {
	if s, ok := w.literal(); ok {
		return s
	}
	return w.text
}

// walk reads the commands around tests: loops over is_eval, conditions,
// server stanzas. exclude is why the tests found here cannot run, if any.
func (x *corpusExtractor) walk(cmds []tclCommand, exclude string) error {
	sub := func(w tclWord, line int, why string) error {
		inner, err := parseTcl(w.text, line)
		if err != nil {
			return err
		}
		return x.walk(inner, why)
	}
	for _, c := range cmds {
		name := wordText(c.words[0])
		n := len(c.words)
		switch {
		case name == "foreach" && n == 4 && wordText(c.words[1]) == "is_eval":
			if err := sub(c.words[3], c.line, exclude); err != nil {
				return err
			}
		case name == "if" && n >= 3:
			cond := strings.Join(strings.Fields(c.words[1].text), " ")
			var then, els *tclWord
			then = &c.words[2]
			if n >= 5 && wordText(c.words[3]) == "else" {
				els = &c.words[4]
			}
			switch cond {
			case "$is_eval == 1", "$is_eval eq 1":
				if err := sub(*then, c.line, exclude); err != nil {
					return err
				}
			case "$is_eval == 0", "$is_eval eq 0":
				if err := sub(*then, c.line, or(exclude, "function mode only (FCALL): the harness runs EVAL scripts")); err != nil {
					return err
				}
				if els != nil {
					if err := sub(*els, c.line, exclude); err != nil {
						return err
					}
				}
			case "0":
				if err := sub(*then, c.line, or(exclude, "disabled in scripting.tcl (if 0)")); err != nil {
					return err
				}
			default:
				if err := sub(*then, c.line, or(exclude, "inside a Tcl condition ("+cond+")")); err != nil {
					return err
				}
				if els != nil {
					if err := sub(*els, c.line, or(exclude, "inside a Tcl condition ("+cond+")")); err != nil {
						return err
					}
				}
			}
		case name == "start_server" && n >= 3:
			spec := strings.Join(strings.Fields(c.words[1].text), " ")
			why := exclude
			if strings.Contains(spec, "overrides") || strings.Contains(spec, "repl") || strings.Contains(spec, "needs:debug") {
				why = or(exclude, "runs on a server started with {"+spec+"} (replication, persistence or DEBUG)")
			}
			if err := sub(c.words[n-1], c.line, why); err != nil {
				return err
			}
		case (name == "for" || name == "foreach" || name == "while") && n >= 3:
			if err := sub(c.words[n-1], c.line, or(exclude, "inside a Tcl loop")); err != nil {
				return err
			}
		case name == "test" && n >= 3:
			if err := x.test(c, exclude); err != nil {
				return err
			}
		}
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// test turns one test into a case.
func (x *corpusExtractor) test(c tclCommand, exclude string) error {
	title := wordText(c.words[1])
	x.names[title]++
	name := title
	if k := x.names[title]; k > 1 {
		name = fmt.Sprintf("%s #%d", title, k)
	}
	cs := corpusCase{Name: name, Line: c.line, Excluded: exclude}
	if cs.Excluded == "" {
		body, err := parseTcl(c.words[2].text, c.line)
		if err != nil {
			return err
		}
		steps, why, err := extractSteps(body, map[string]string{})
		if err != nil {
			return err
		}
		if why == "" && len(steps) == 0 {
			why = "runs no script"
		} else if why == "" && !hasScript(steps) {
			why = "runs no script"
		}
		if why != "" {
			cs.Excluded = why
		} else {
			cs.Steps = steps
		}
	}
	x.cases = append(x.cases, cs)
	return nil
}

func hasScript(steps []corpusStep) bool {
	for _, s := range steps {
		if s.Script != nil {
			return true
		}
	}
	return false
}

// unsupported are commands of the test suite that make a test more than
// single script calls on one connection, with the reason.
var unsupported = map[string]string{
	"rd": "needs several connections", "redis_deferring_client": "needs several connections",
	"run_script_on_connection": "needs several connections", "kill_script": "stops a busy script",
	"after": "waits for time to pass", "wait_for_condition": "waits for time to pass", "wait_for_ofs_sync": "replication",
	"assert_replication_stream": "replication", "attach_to_replication_stream": "replication", "close_replication_stream": "replication",
	"restart_server": "restarts the server", "start_server": "starts another server", "exec": "runs a program",
	"populate": "bulk set-up through DEBUG", "debug_sleep": "waits for time to pass", "r2": "needs several connections",
	"csvdump": "dumps the dataset", "if": "Tcl control flow builds the calls", "for": "Tcl control flow builds the calls",
	"foreach": "Tcl control flow builds the calls", "while": "Tcl control flow builds the calls",
	"wait_for_blocked_client": "needs several connections", "run_script_ro": "", "assert_encoding": "reads internal encodings",
	"set_enabled_log_pattern": "reads the server log", "verify_log_message": "reads the server log",
}

// rUnsupported are the commands a test sends with "r" that make it more than
// single script calls on one connection.
var rUnsupported = map[string]string{
	"config": "changes or reads the server configuration", "debug": "uses DEBUG", "select": "uses other databases (the harness keeps one)",
	"multi": "uses MULTI/EXEC", "exec": "uses MULTI/EXEC", "client": "uses CLIENT", "acl": "uses ACL users", "auth": "uses ACL users",
	"info": "reads INFO", "hello": "switches to RESP3", "readraw": "reads the raw protocol", "evalsha": "uses the script cache",
	"evalsha_ro": "uses the script cache", "script": "uses the script cache", "function": "uses functions", "fcall": "uses functions",
	"fcall_ro": "uses functions", "slowlog": "reads the slow log", "replicaof": "replication", "slaveof": "replication",
	"wait": "replication", "monitor": "uses MONITOR", "object": "reads internal encodings", "memory": "reads memory usage",
	"deferred": "needs several connections", "read": "needs several connections", "ping": "", "shutdown": "stops the server",
	"bgsave": "persistence", "save": "persistence", "bgrewriteaof": "persistence", "dbsize": "", "flushdb": "", "flushall": "",
	"debug_sleep": "waits for time to pass", "role": "replication", "latency": "reads latency",
}

// extractSteps reads a test body into steps; why is set when the test cannot
// be one.
func extractSteps(cmds []tclCommand, vars map[string]string) (steps []corpusStep, why string, err error) {
	for _, c := range cmds {
		first := c.words[0]
		name, ok := first.literal()
		if !ok {
			return nil, "calls a command named by a Tcl variable (" + first.text + ")", nil
		}
		args := c.words[1:]
		switch {
		case name == "run_script" || name == "run_script_ro":
			if len(args) < 2 {
				return nil, "calls run_script without keys", nil
			}
			src, ok := args[0].literal()
			if !ok && args[0].kind == 0 && strings.HasPrefix(args[0].text, "$") {
				src, ok = vars[args[0].text[1:]]
			}
			if !ok {
				return nil, "builds a script with Tcl (" + args[0].text + ")", nil
			}
			words, why := literals(args[1:])
			if why != "" {
				return nil, why, nil
			}
			st, why := scriptStep(c.line, src, words, name == "run_script_ro")
			if why != "" {
				return nil, why, nil
			}
			steps = append(steps, st)
		case name == "r":
			if len(args) == 0 {
				continue
			}
			words, why := literals(args)
			if why != "" {
				return nil, why, nil
			}
			sub := strings.ToLower(words[0])
			switch {
			case sub == "eval" || sub == "eval_ro":
				if len(words) < 3 {
					return nil, "calls EVAL without keys", nil
				}
				st, why := scriptStep(c.line, words[1], words[2:], sub == "eval_ro")
				if why != "" {
					return nil, why, nil
				}
				steps = append(steps, st)
			case rUnsupported[sub] != "":
				return nil, rUnsupported[sub], nil
			default:
				steps = append(steps, corpusStep{Line: c.line, Command: words})
			}
		case name == "set" && len(args) == 2 && args[0].kind == 0:
			if v, ok := args[1].literal(); ok && args[1].kind == '{' {
				vars[args[0].text] = v
				continue
			}
			fallthrough
		default:
			if reason, ok := unsupported[name]; ok && reason != "" {
				return nil, reason, nil
			}
			for _, w := range args {
				if w.kind == '[' || (w.kind == '{' && startsWithCall(w.text)) {
					inner, err := parseTcl(w.text, c.line)
					if err != nil {
						return nil, "", err
					}
					more, why, err := extractSteps(inner, vars)
					if err != nil || why != "" {
						return nil, why, err
					}
					steps = append(steps, more...)
				}
			}
		}
	}
	return steps, "", nil
}

func startsWithCall(s string) bool {
	f := strings.Fields(s)
	return len(f) > 0 && (f[0] == "run_script" || f[0] == "run_script_ro" || f[0] == "r")
}

func literals(ws []tclWord) ([]string, string) {
	out := make([]string, len(ws))
	for i, w := range ws {
		s, ok := w.literal()
		if !ok {
			return nil, "builds arguments with Tcl (" + w.text + ")"
		}
		out[i] = s
	}
	return out, ""
}

// scriptStep is a script call: words are numkeys, then keys and arguments.
func scriptStep(line int, src string, words []string, readOnly bool) (corpusStep, string) {
	numkeys, err := strconv.Atoi(words[0])
	if err != nil || numkeys < 0 || numkeys > len(words)-1 {
		return corpusStep{}, "passes a numkeys Redis refuses (" + words[0] + ")"
	}
	s := src
	return corpusStep{Line: line, Script: &s, ReadOnly: readOnly, Keys: words[1 : 1+numkeys], Args: words[1+numkeys:]}, ""
}

// The corpus file is what the extraction gives today.
func TestScriptingCorpusExtracted(t *testing.T) {
	src, err := os.ReadFile(scriptingTcl)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := extractCorpus(string(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(cases, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(scriptingCorpus, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(scriptingCorpus)
	if err != nil {
		t.Fatalf("%v (run go test ./luatest -run TestScriptingCorpusExtracted -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Fatalf("%s is not what %s gives (rerun with -update):\n%s", scriptingCorpus, scriptingTcl, d)
	}
	included := 0
	for _, c := range cases {
		if c.Excluded == "" {
			included++
		}
	}
	t.Logf("%d tests, %d included", len(cases), included)
	if included < 40 {
		t.Errorf("only %d tests included", included)
	}
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	b, err := os.ReadFile(scriptingCorpus)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// harnessEval runs src as EVAL would on the harness: shebang and compile
// errors answered as Redis answers them, then the run's typed reply.
func harnessEval(srv *Server, src string, keys, args []string, readOnly bool) (any, error) {
	if _, _, shebangErr := readShebang([]byte(src)); shebangErr != "" {
		return nil, &ErrorReply{Msg: "ERR " + shebangErr}
	}
	sc, err := Load("user_script", []byte(src))
	if err != nil {
		return nil, &ErrorReply{Msg: "ERR Error compiling script (new function): " + err.Error()}
	}
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	var res *Result
	if readOnly {
		res = srv.RunReadOnly(sc, keys, anyArgs...)
	} else {
		res = srv.Run(sc, keys, anyArgs...)
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Typed, nil
}

func TestConformanceScriptingTcl(t *testing.T) {
	client := startRedis(t)
	conn := dialRESP(t, client.Options().Addr)
	ctx := context.Background()
	ran := 0
	for _, cs := range loadCorpus(t) {
		if cs.Excluded != "" {
			continue
		}
		t.Run(cs.Name, func(t *testing.T) {
			ran++
			flush(t, client)
			srv := NewServer(NewClock(time.Now()))
			srv.ScriptTimeout = conformanceTimeout
			for _, st := range cs.Steps {
				var want, got any
				var what string
				switch {
				case st.Command != nil && (strings.EqualFold(st.Command[0], "flushall") || strings.EqualFold(st.Command[0], "flushdb")):
					flush(t, client)
					srv.db = newDB()
					continue
				case st.Command != nil:
					what = strings.Join(st.Command, " ")
					want = normalize(conn.do(st.Command...))
					got = normalize(srv.doTyped(st.Command...))
				default:
					what = *st.Script
					cmd := []string{"eval", *st.Script, strconv.Itoa(len(st.Keys))}
					if st.ReadOnly {
						cmd[0] = "eval_ro"
					}
					want = normalize(conn.do(append(append(cmd, st.Keys...), st.Args...)...))
					got = normalize(harnessEval(srv, *st.Script, st.Keys, st.Args, st.ReadOnly))
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("scripting.tcl:%d: %s\nharness: %#v\nredis:   %#v", st.Line, what, got, want)
				}
			}
			compareKeyspaces(t, ctx, srv, client)
		})
	}
	if ran < 40 {
		t.Errorf("ran only %d cases", ran)
	}
}
