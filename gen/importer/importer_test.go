package importer_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/importer"
	"github.com/hanchat/luagen/gen/keyspec"
)

var update = flag.Bool("update", false, "rewrite testdata/draft.golden.yaml")

// The scripts of testdata/src are found in Go (go-redis, redigo with a
// constant, rueidis) and in .lua files (a name-N.lua says N KEYS), each with
// its source unchanged.
func TestFindReadsGoAndLua(t *testing.T) {
	scripts, err := importer.Find([]string{"testdata/src"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range scripts {
		got = append(got, s.Name)
	}
	if want := "lock_extend notify sweep enqueue take unlock counter"; strings.Join(got, " ") != want {
		t.Fatalf("scripts %q, want %q", strings.Join(got, " "), want)
	}
	for _, s := range scripts {
		switch s.Name {
		case "sweep":
			if s.NumKeys != 2 {
				t.Errorf("sweep-2.lua: %d KEYS", s.NumKeys)
			}
		case "unlock":
			if s.NumKeys != 1 || !strings.Contains(string(s.Src), `return redis.call("DEL", KEYS[1]) end return 0`) {
				t.Errorf("unlock: %d KEYS, %q", s.NumKeys, s.Src)
			}
		case "enqueue":
			if !strings.HasPrefix(string(s.Src), "\nlocal rcall = redis.call\n") || !strings.Contains(s.Doc, "KEYS[1] -> jobs:{<queue>}:wait") || !strings.HasSuffix(s.File, "scripts.go:17") {
				t.Errorf("enqueue: %q %q %s", s.Src, s.Doc, s.File)
			}
		}
	}
}

// The draft of testdata/src is testdata/draft.golden.yaml: positions named from
// the comments, patterns from the comments, value types from the commands, a
// prefix passed in ARGV and the keys and channels built from it, a TODO for
// every decision left open, which the parser lists at their lines.
func TestDraftOfTheSources(t *testing.T) {
	scripts, err := importer.Find([]string{"testdata/src"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := importer.New("jobs", scripts)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(string(d.Spec), "testdata/src/", "")
	golden := "testdata/draft.golden.yaml"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("draft:\n%s\nwant:\n%s", got, want)
	}
	_, err = keyspec.Parse("keyspec.yaml", d.Spec)
	if err == nil {
		t.Fatal("a draft with open decisions parses")
	}
	if n := strings.Count(err.Error(), "still open"); n != d.Todos || n < 10 {
		t.Errorf("%d open decisions reported, the draft counts %d:\n%v", n, d.Todos, err)
	}
}

// Once a person fills its TODOs (here: by one fixed set of decisions), the draft
// generates: every script loads and its calls check.
func TestFilledDraftGenerates(t *testing.T) {
	scripts, err := importer.Find([]string{"testdata/src"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := importer.New("jobs", scripts)
	if err != nil {
		t.Fatal(err)
	}
	spec := string(d.Spec)
	for _, r := range []struct{ re, to string }{
		{`reason: "TODO\(luagen import\): what this prefix holds[^"]*"`, `reason: "the queues"`},
		{`prefix: "TODO\(luagen import\): the prefix of the channels[^"]*", reason: "TODO\(luagen import\): what they carry"`, `prefix: "jobs:events:", reason: "job events"`},
		{`\{type: "TODO\(luagen import\): uuid[^"]*"\}`, `{type: name, max_len: 32}`},
		{`value: \[TODO\(luagen import\)[^\]]*\]`, `value: [string]`},
		{`ttl: \{rule: fixed, value: "TODO\(luagen import\)[^"]*"\}`, `ttl: {rule: clamped, max: 1h, from: "the caller's lease"}`},
		{`ttl: \{rule: none, reason: "TODO\(luagen import\)[^"]*"\}`, `ttl: {rule: none, reason: "kept until the application deletes it"}`},
		{`max_bytes: "TODO\(luagen import\)[^"]*"`, `max_bytes: 4096`},
		{`max: "TODO\(luagen import\)[^"]*"`, `max: 1h`},
		{`max_len: "TODO\(luagen import\)[^"]*"`, `max_len: 32`},
		{`cross_slot: "TODO\(luagen import\)[^"]*"`, `cross_slot: "one standalone server"`},
		{`reply: "TODO\(luagen import\)[^"]*"`, `reply: {type: string, name: id, nullable: true}`},
		{`pattern: "TODO\(luagen import\): the name's pattern, app:\{id\} style"`, `pattern: "jobs:TODO"`},
		{`pattern: "TODO\(luagen import\): the channel's pattern[^"]*"`, `pattern: "jobs:events:watchers"`},
		{`unused: \{reason: "TODO\(luagen import\)[^"]*"\}`, `unused: {reason: "older clients pass it"}`},
	} {
		spec = regexp.MustCompile(r.re).ReplaceAllString(spec, r.to)
	}
	// The patterns nobody wrote down: one each.
	n := 0
	spec = regexp.MustCompile(`"jobs:TODO"`).ReplaceAllStringFunc(spec, func(string) string { n++; return `"jobs:misc:k` + string(rune('0'+n)) + `"` })
	for _, line := range strings.Split(spec, "\n") {
		if strings.Contains(line, keyspec.TodoMarker) && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			t.Fatalf("a TODO is left: %s\n%s", line, spec)
		}
	}
	parsed, err := keyspec.Parse("keyspec.yaml", []byte(spec))
	if err != nil {
		t.Fatalf("%v\n%s", err, spec)
	}
	files := fstest.MapFS{}
	for _, s := range d.Scripts {
		files[filepath.Join("jobs", s.Name+".lua")] = &fstest.MapFile{Data: s.Src}
	}
	if _, err := compiler.Load(parsed, files, "lua"); err != nil {
		t.Fatalf("%v\n%s", err, spec)
	}
}

// A key whose name the script reads from data (a parent's key kept in the
// job's hash), and one built on it, are drafted as derived keys from data,
// their patterns left to a person.
func TestDraftDerivesKeysReadFromData(t *testing.T) {
	src := []byte(`local parent = redis.call('HGET', KEYS[1], 'parent')
redis.call('SREM', parent .. ':deps', ARGV[1])
return redis.call('HSET', parent, 'state', 'ready')
`)
	d, err := importer.New("q", []importer.Script{{Name: "finish", File: "finish.lua", Src: src}})
	if err != nil {
		t.Fatal(err)
	}
	spec := string(d.Spec)
	for _, want := range []string{"      - {key: deps, from: data}", "      - {key: data_key, from: data}", "  deps:\n    # finish builds <the reply of HGET, line 1> .. \":deps\""} {
		if !strings.Contains(spec, want) {
			t.Errorf("draft lacks %q:\n%s", want, spec)
		}
	}
}

// A script reading KEYS[i] (ipairs(KEYS)) drafts its last KEYS position
// repeating; one publishing to ARGV[i] in a loop from 2 drafts ARGV[2] a
// repeating channel argument, and a script that reads no KEYS takes none.
func TestDraftRepeatsVariadicPositions(t *testing.T) {
	d, err := importer.New("q", []importer.Script{
		{Name: "unlock", File: "unlock.lua", Src: []byte("local n = 0\nfor _, k in ipairs(KEYS) do\n  if redis.call('GET', k) == ARGV[1] then n = n + redis.call('DEL', k) end\nend\nreturn n\n")},
		{Name: "broadcast", File: "broadcast.lua", Src: []byte("for i = 2, #ARGV do\n  redis.call('PUBLISH', ARGV[i], ARGV[1])\nend\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := string(d.Spec)
	for _, want := range []string{
		`      - {name: key1, one_of: [key1], repeat: {min: 1, max: "TODO(luagen import): the most keys a call passes here`,
		`      - {name: arg2, channel: arg2, repeat: {min: 1, max: "TODO(luagen import): the most values a call passes here (the script reads ARGV[i])"}}`,
	} {
		if !strings.Contains(spec, want) {
			t.Errorf("draft lacks %q:\n%s", want, spec)
		}
	}
	if b := spec[strings.Index(spec, "  broadcast:\n"):]; strings.Contains(b, "    keys:") {
		t.Errorf("a script reading no KEYS drafted with KEYS:\n%s", b)
	}
}

// A KEYS position whose description names it as a generated wrapper's own
// local (a queue's "prefix") is drafted under another name: generate refuses
// a parameter the wrapper shadows. Other names stay as described.
func TestDraftAvoidsTheWrappersOwnNames(t *testing.T) {
	src := []byte(`-- KEYS[1] prefix
-- KEYS[2] counter
redis.call('INCR', KEYS[1])
return redis.call('INCR', KEYS[2])
`)
	d, err := importer.New("q", []importer.Script{{Name: "bump", File: "bump.lua", Src: src}})
	if err != nil {
		t.Fatal(err)
	}
	spec := string(d.Spec)
	for _, want := range []string{"{name: prefix_key, ", "{name: counter, "} {
		if !strings.Contains(spec, want) {
			t.Errorf("draft lacks %q:\n%s", want, spec)
		}
	}
	if strings.Contains(spec, "{name: prefix, ") {
		t.Errorf("draft names a KEYS position as a wrapper's local:\n%s", spec)
	}
}
