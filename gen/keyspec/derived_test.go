package keyspec_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

// derivedSpec is a job queue whose script builds job keys from its KEYS
// anchor; topology, the script's derived entries and its ARGV are the edits.
func derivedSpec(topology, keys, argv, derived string) string {
	return `version: 1
instances:
  q:
    topology: ` + topology + `
    dbs:
      db0: {index: 0, url_env: Q_URL, user: q}
users:
  q:
    instance: q
    select: {allow: false, reason: db0 only}
    key_prefixes: [{prefix: "q:", reason: queues}]
    channel_prefixes: [{prefix: "ev:", reason: events}]
keys:
  jobs:
    db: q.db0
    pattern: "q:{{queue}}:jobs"
    params: {queue: {type: name, max_len: 32}}
    value: [hash]
    ttl: {rule: fixed, value: 1h}
  untagged:
    db: q.db0
    pattern: "q:plain:{queue}"
    params: {queue: {type: name, max_len: 32}}
    value: [hash]
    ttl: {rule: fixed, value: 1h}
  prefix:
    db: q.db0
    pattern: "q:{{queue}}:"
    params: {queue: {type: name, max_len: 32}}
    value: [prefix]
  job:
    db: q.db0
    pattern: "q:{{queue}}:jobs:{id}"
    params: {queue: {type: name, max_len: 32}, id: {type: int, min: 1, max: 1000}}
    value: [hash]
    ttl: {rule: fixed, value: 1h}
  job_by_uuid:
    db: q.db0
    pattern: "q:{{queue}}:uuid:{id}"
    params: {queue: {type: uuid}, id: {type: uuid}}
    value: [hash]
    ttl: {rule: fixed, value: 1h}
  free:
    db: q.db0
    pattern: "q:free:{id}"
    params: {id: {type: int, min: 1, max: 1000}}
    value: [string]
    ttl: {rule: fixed, value: 1h}
channels:
  ev:
    instance: q
    pattern: "ev:{id}"
    params: {id: {type: int, min: 1, max: 1000}}
    max_bytes: 64
scripts:
  take:
    instance: q
    keys: ` + keys + `
    argv: ` + argv + `
    derived: ` + derived + `
    reply: {type: int, name: n}
`
}

func TestDerivedParses(t *testing.T) {
	spec, err := keyspec.Parse("keyspec.yaml", []byte(derivedSpec("cluster", "[{name: jobs, one_of: [jobs]}]", "[]",
		"[{key: job, from: jobs, reason: popped}, {channel: ev}]")))
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Script("take")
	if len(s.Derived) != 2 || s.Derived[0].Key != spec.Key("job") || s.Derived[0].From != 1 || s.Derived[1].Channel == nil || s.Derived[0].Reason != "popped" {
		t.Fatalf("derived: %+v", s.Derived)
	}
	var reach []string
	for _, k := range s.Reach() {
		reach = append(reach, k.Name)
	}
	if strings.Join(reach, ",") != "jobs,job" {
		t.Fatalf("reach: %v", reach)
	}
	p := spec.Key("prefix")
	if !p.Prefix() || p.Pattern.Raw != "q:{{queue}}:" || p.TTL.Rule != keyspec.TTLNone || p.Pattern.Example() != "q:{name}:" {
		t.Fatalf("prefix key: %+v %q", p, p.Pattern.Example())
	}
	if !spec.Key("job").Pattern.Match("q:{a}:jobs:7") || spec.Key("job").Pattern.Match("q:{a}:jobs:x") || !p.Pattern.Match("q:{a}:") {
		t.Fatal("Pattern.Match")
	}
	st, err := keyspec.Parse("keyspec.yaml", []byte(derivedSpec("standalone", "[{name: jobs, one_of: [jobs]}]",
		"[{name: prefix, type: key, key: prefix}]", "[{key: job, from: prefix}, {key: free}]")))
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Script("take").Derived; d[0].FromArgv != 1 || d[0].From != 0 || d[1].From != 0 || d[1].FromArgv != 0 {
		t.Fatalf("standalone derived: %+v %+v", d[0], d[1])
	}
	if a := st.Script("take").Argv[0]; a.Type != keyspec.ArgKey || a.Key != st.Key("prefix") {
		t.Fatalf("ARGV key: %+v", a)
	}
}

// Each misuse of derived, prefix keys and ARGV keys is an error at its line.
func TestDerivedMisuse(t *testing.T) {
	jobs := "[{name: jobs, one_of: [jobs]}]"
	for name, tc := range map[string]struct {
		topology, keys, argv, derived string
		want                          string
	}{
		"key and channel": {"standalone", jobs, "[]", "[{key: job, channel: ev, from: jobs}]",
			`keyspec.yaml:60: script "take" derived[0]: set exactly one of key and channel`},
		"undeclared key": {"standalone", jobs, "[]", "[{key: nope, from: jobs}]",
			`keyspec.yaml:60: script "take" derived key "nope": key "nope" is not declared`},
		"unknown anchor": {"standalone", jobs, "[]", "[{key: job, from: wait}]",
			`keyspec.yaml:60: script "take" derived key "job": from "wait" is not one of the script's KEYS positions (jobs) nor an ARGV of type key`},
		"not after its anchor": {"standalone", jobs, "[]", "[{key: free, from: jobs}]",
			`keyspec.yaml:60: script "take" derived key "free": pattern "q:free:{id}" does not start with "q:{{queue}}:jobs", the pattern of key "jobs" that KEYS[1] "jobs" takes`},
		"the anchor itself": {"standalone", jobs, "[]", "[{key: jobs, from: jobs}]",
			`keyspec.yaml:60: script "take" derived key "jobs": pattern "q:{{queue}}:jobs" is the anchor's own pattern (key "jobs"): take it in KEYS`},
		"placeholders differ": {"standalone", "[{name: jobs, one_of: [prefix]}]", "[]", "[{key: job_by_uuid, from: jobs}]",
			`keyspec.yaml:60: script "take" derived key "job_by_uuid": placeholder {queue} is a uuid in key "job_by_uuid" and {queue} a name in the anchor "prefix"`},
		"twice": {"standalone", jobs, "[]", "[{key: job, from: jobs}, {key: job, from: jobs}]",
			`keyspec.yaml:60: script "take" derived key "job": declared twice`},
		"cluster without anchor": {"cluster", jobs, "[]", "[{key: free}]",
			`keyspec.yaml:60: script "take" derived key "free": on cluster instance q a key built from its own literal start has no hash tag tying it to the script's KEYS (CROSSSLOT)`},
		"cluster anchor untagged": {"cluster", "[{name: plain, one_of: [untagged]}]", "[]", "[{key: free, from: plain}]",
			`does not start with "q:plain:{queue}"`},
		"cluster ARGV key, its tag not shared": {"cluster", jobs, "[{name: prefix, type: key, key: prefix}]", "[]",
			`keyspec.yaml:59: script "take" ARGV[1] "prefix": on cluster instance q a key passed in ARGV is not routed by Redis Cluster: placeholder {queue} of key "prefix"'s hash tag is not shared with the KEYS: list it under shared_placeholders`},
		"cluster ARGV key without a tag": {"cluster", jobs, "[{name: plain, type: key, key: untagged}]", "[]",
			`on cluster instance q a key passed in ARGV is not routed by Redis Cluster: key "untagged" has no hash tag`},
		"cluster ARGV key, KEYS of another tag": {"cluster", "[{name: free, one_of: [free]}]", "[{name: prefix, type: key, key: prefix}]", "[]",
			`on cluster instance q a key passed in ARGV is not routed by Redis Cluster: key "prefix"'s hash tag is not that of key "free", which the script takes in KEYS (free)`},
		"ARGV key without key": {"standalone", jobs, "[{name: prefix, type: key}]", "[]",
			`keyspec.yaml:59: script "take" ARGV[1] "prefix": type key names the declared key it carries: key: <name>`},
		"key on another type": {"standalone", jobs, "[{name: prefix, type: string, max_bytes: 9, key: prefix}]", "[]",
			`keyspec.yaml:59: script "take" ARGV[1] "prefix": key applies to type key`},
		"ARGV key optional": {"standalone", jobs, "[{name: prefix, type: key, key: prefix, optional: true}]", "[]",
			`an ARGV of type key is never optional`},
		"a channel from KEYS that does not start with it": {"standalone", jobs, "[]", "[{channel: ev, from: jobs}]",
			`keyspec.yaml:60: script "take" derived channel "ev": pattern "ev:{id}" does not start with "q:{{queue}}:jobs"`},
		"a built key that starts with a placeholder": {"standalone", "[{name: jobs, one_of: [jobs]}]", "[]", "[{key: any}]",
			`key "any" is not declared`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := keyspec.Parse("keyspec.yaml", []byte(derivedSpec(tc.topology, tc.keys, tc.argv, tc.derived)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			if !errors.Is(err, keyspec.ErrInvalid) {
				t.Error("not ErrInvalid")
			}
		})
	}
}

// On a cluster, a prefix passed in ARGV whose hash tag is the KEYS' own,
// its placeholder shared, is routed with them: it parses, and the keys built
// from it are derived as from a KEYS anchor.
func TestClusterARGVKeySharingTheTag(t *testing.T) {
	spec, err := keyspec.Parse("keyspec.yaml", []byte(derivedSpec("cluster", "[{name: jobs, one_of: [jobs]}]\n    shared_placeholders: [queue]",
		"[{name: prefix, type: key, key: prefix}]", "[{key: job, from: prefix}]")))
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Scripts[0]
	if s.Argv[0].Key == nil || s.Argv[0].Key.Name != "prefix" || len(s.Derived) != 1 || s.Derived[0].FromArgv != 1 {
		t.Fatalf("argv %+v derived %+v", s.Argv[0], s.Derived)
	}
}

// A prefix key holds no value: no TTL, no fields, and its pattern ends in ':'.
func TestPrefixKeyMisuse(t *testing.T) {
	base := derivedSpec("standalone", "[{name: jobs, one_of: [jobs]}]", "[]", "[]")
	for name, tc := range map[string]struct{ from, to, want string }{
		"no final colon": {`pattern: "q:{{queue}}:"`, `pattern: "q:{{queue}}"`, `a prefix key's pattern ends with one ':'`},
		"a TTL":          {"    value: [prefix]\n", "    value: [prefix]\n    ttl: {rule: fixed, value: 1h}\n", "a prefix key holds no value and has no TTL: drop ttl"},
		"with a value":   {"value: [prefix]", "value: [prefix, hash]", "a prefix key holds no value: value is [prefix] alone"},
	} {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(base, tc.from, tc.to, 1)
			if src == base {
				t.Fatal("the edit did not apply")
			}
			_, err := keyspec.Parse("keyspec.yaml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

// A spec luagen import drafted is refused while a decision is open, each at
// its line, naming the entry.
func TestOpenDecisionsAreListed(t *testing.T) {
	src := strings.Replace(derivedSpec("standalone", "[{name: jobs, one_of: [jobs]}]", "[]", "[]"),
		`pattern: "q:free:{id}"`, `pattern: "TODO(luagen import): the name's pattern"`, 1)
	src = strings.Replace(src, "ttl: {rule: fixed, value: 1h}\n  untagged", `ttl: {rule: none, reason: "TODO(luagen import): why it never expires"}`+"\n  untagged", 1)
	_, err := keyspec.Parse("keyspec.yaml", []byte(src))
	want := "keyspec.yaml:19: keys.jobs.ttl.reason: still open (luagen import drafted it): why it never expires\n" +
		"keyspec.yaml:45: keys.free.pattern: still open (luagen import drafted it): the name's pattern"
	if err == nil || err.Error() != want {
		t.Fatalf("err:\n%v\nwant:\n%s", err, want)
	}
}
