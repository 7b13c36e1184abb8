package compiler_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

// langSpec is a job queue, a lock over many resources and a semaphore's keys,
// with script s of the given signature (its keys, argv and reply lines).
func langSpec(t *testing.T, signature string) *keyspec.Spec {
	t.Helper()
	src := `version: 1
instances:
  a:
    topology: standalone
    dbs:
      db0: {index: 0, url_env: A_URL, user: u}
users:
  u:
    instance: a
    select: {allow: false, reason: db0 only}
    key_prefixes: [{prefix: "q:", source: test}]
    channel_prefixes: [{prefix: "q:ev:", source: test}]
keys:
  lock:
    db: a.db0
    pattern: "q:lock:{resource}"
    params: {resource: {type: name, max_len: 64}}
    value: [string]
    ttl: {rule: fixed, value: 30s}
  job:
    db: a.db0
    pattern: "q:job:{id}"
    params: {id: {type: uuid}}
    value: [hash]
    ttl: {rule: none, reason: "a job is kept until the worker deletes it"}
  wait:
    db: a.db0
    pattern: "q:wait"
    value: [list]
    max_len: 100
    ttl: {rule: none, reason: "the queue itself"}
  events:
    db: a.db0
    pattern: "q:events"
    value: [stream]
    max_len: 1000
    ttl: {rule: none, reason: "trimmed on write"}
  cache:
    db: a.db0
    pattern: "q:cache:{id}"
    params: {id: {type: uuid}}
    value: [string]
    max_bytes: 100
    ttl: {rule: clamped, max: 1h}
channels:
  job_events:
    instance: a
    pattern: "q:ev:jobs"
    max_bytes: 256
  topic:
    instance: a
    pattern: "q:ev:{topic}"
    params: {topic: {type: name, max_len: 16}}
    max_bytes: 256
scripts:
  s:
    instance: a
` + signature
	spec, err := keyspec.Parse("keyspec.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The checks of this wave's signatures: repeating and unused positions,
// channels in KEYS, ARGV and literals, the static truth of TTLs and bounds.
// want is a part of the one error Load reports ("" for a script it accepts);
// unproven a part of what lint reports instead.
func TestLanguageChecks(t *testing.T) {
	const reply = "    reply: {type: int, name: n}\n"
	for name, tc := range map[string]struct {
		sig, lua, want, unproven string
	}{
		"a lock over many resources": {
			"    keys: [{name: locks, one_of: [lock], repeat: {min: 1, max: 16}}]\n    argv: [{name: owner, type: token}, {name: ttl, type: duration_ms, ttl_of: lock}]\n" + reply,
			"for i = 1, #KEYS do\n  if not redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end\nend\nreturn #KEYS", "", ""},
		"reading past a repeating position's max": {
			"    keys: [{name: locks, one_of: [lock], repeat: {min: 1, max: 2}}]\n" + reply,
			"return redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3])", `reads KEYS[3], but script "s" declares 2 KEYS`, ""},
		"reading within a repeating position": {
			"    keys: [{name: first, one_of: [lock]}, {name: more, one_of: [lock], repeat: {min: 0, max: 3}}]\n" + reply,
			"return redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[4])", "", ""},
		"an unused position the script reads": {
			"    keys: [{name: job, one_of: [job]}, {name: legacy, one_of: [wait], unused: {reason: old callers pass it}}]\n" + reply,
			"return redis.call('HLEN', KEYS[1]) + redis.call('LLEN', KEYS[2])", `reads KEYS[2] "legacy", which script "s" declares unused (old callers pass it)`, ""},
		"an unused position left alone": {
			"    keys: [{name: job, one_of: [job]}, {name: legacy, one_of: [wait], unused: {reason: old callers pass it}}]\n    argv: [{name: old, unused: {reason: v1 clients}}, {name: f, type: name}]\n" + reply,
			"return redis.call('HEXISTS', KEYS[1], ARGV[2])", "", ""},
		"an unused argument the script reads": {
			"    keys: [{name: job, one_of: [job]}]\n    argv: [{name: old, unused: {reason: v1 clients}}]\n" + reply,
			"return redis.call('HEXISTS', KEYS[1], ARGV[1])", `reads ARGV[1] "old", which script "s" declares unused (v1 clients)`, ""},
		"trailing ARGV the caller may append": {
			"    keys: [{name: job, one_of: [job]}]\n    argv: [{name: fields, type: name, repeat: {min: 0, max: 8}}]\n" + reply,
			"return redis.call('HDEL', KEYS[1], ARGV[1], ARGV[2])", "", ""},
		"a channel in KEYS": {
			"    keys: [{name: job, one_of: [job]}, {name: events, channel: job_events}]\n    argv: [{name: msg, type: string, max_bytes: 64}]\n" + reply,
			"redis.call('HSET', KEYS[1], 'state', 'done')\nreturn redis.call('PUBLISH', KEYS[2], ARGV[1])", "", ""},
		"a channel in ARGV": {
			"    keys: [{name: job, one_of: [job]}]\n    argv: [{name: to, channel: topic}, {name: msg, type: string, max_bytes: 64}]\n" + reply,
			"redis.call('HSET', KEYS[1], 'state', 'done')\nreturn redis.call('SPUBLISH', ARGV[1], ARGV[2])", "", ""},
		"a declared channel as a literal": {
			"    keys: [{name: job, one_of: [job]}]\n" + reply,
			"redis.call('HSET', KEYS[1], 'state', 'done')\nreturn redis.call('PUBLISH', 'q:ev:jobs', 'done')", "", ""},
		"an undeclared literal channel": {
			"    keys: [{name: job, one_of: [job]}]\n" + reply,
			"redis.call('HSET', KEYS[1], 'state', 'done')\nreturn redis.call('PUBLISH', 'q:other', 'done')", `lua/a/s.lua:2: PUBLISH to "q:other": no channel of instance a has this name`, ""},
		"a key position published to": {
			"    keys: [{name: job, one_of: [job]}]\n" + reply,
			"return redis.call('PUBLISH', KEYS[1], 'x')", `PUBLISH to KEYS[1] "job", a key position (key job)`, ""},
		"a string argument published to": {
			"    keys: [{name: job, one_of: [job]}]\n    argv: [{name: to, type: name}]\n" + reply,
			"redis.call('HLEN', KEYS[1])\nreturn redis.call('PUBLISH', ARGV[1], 'x')", `PUBLISH to ARGV[1] "to", a name argument`, ""},
		"a channel built in the script": {
			"    keys: [{name: job, one_of: [job]}]\n    argv: [{name: id, type: uuid}]\n" + reply,
			"redis.call('HLEN', KEYS[1])\nreturn redis.call('PUBLISH', 'q:ev:' .. ARGV[1], 'x')", `lua/a/s.lua:2: PUBLISH: argument 2 of redis.call is a channel built by the script ("q:ev:" .. ARGV[1]): a name built from literal text ("q:ev:" .. ARGV[1]) that no derived channel of the script matches`, ""},
		"a channel position used as a key": {
			"    keys: [{name: job, one_of: [job]}, {name: events, channel: job_events}]\n" + reply,
			"redis.call('HLEN', KEYS[1])\nreturn redis.call('SET', KEYS[2], 'x')", `SET takes KEYS[2] "events" as a key, but it passes channel "job_events"'s name`, ""},
		"a TTL key created without its expiry": {
			"    keys: [{name: lock, one_of: [lock]}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"return redis.call('SET', KEYS[1], ARGV[1], 'NX') and 1 or 0", `lua/a/s.lua:1: SET may create KEYS[1] "lock" (key "lock", ttl fixed), and the script never sets its expiry`, ""},
		"a TTL key given its expiry by a second call": {
			"    keys: [{name: lock, one_of: [lock]}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"redis.call('SET', KEYS[1], ARGV[1])\nreturn redis.call('PEXPIRE', KEYS[1], 30000)", "", ""},
		"a literal TTL other than the key's": {
			"    keys: [{name: lock, one_of: [lock]}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"return redis.call('SET', KEYS[1], ARGV[1], 'EX', 60) and 1 or 0", `SET on KEYS[1] "lock": an expiry of 1m0s, but key "lock" declares ttl fixed 30s`, ""},
		"a millisecond argument as seconds": {
			"    keys: [{name: lock, one_of: [lock]}]\n    argv: [{name: ttl, type: duration_ms, ttl_of: lock}]\n" + reply,
			"redis.call('SET', KEYS[1], 1)\nreturn redis.call('EXPIRE', KEYS[1], ARGV[1])", `ARGV[1] "ttl" is a duration the wrapper sends in milliseconds, and this expiry is in seconds`, ""},
		"a clamped TTL above its max": {
			"    keys: [{name: c, one_of: [cache]}]\n    argv: [{name: v, type: string, max_bytes: 100}]\n" + reply,
			"return redis.call('SET', KEYS[1], ARGV[1], 'PX', 7200000) and 1 or 0", `an expiry of 2h0m0s, above key "cache"'s clamped max 1h0m0s`, ""},
		"an expiry on a durable key": {
			"    keys: [{name: job, one_of: [job]}]\n" + reply,
			"redis.call('HSET', KEYS[1], 'state', 'new')\nreturn redis.call('PEXPIRE', KEYS[1], 1000)", `PEXPIRE sets an expiry on KEYS[1] "job", but key "job" is declared ttl none`, ""},
		"PERSIST on a TTL key": {
			"    keys: [{name: lock, one_of: [lock]}]\n" + reply,
			"return redis.call('PERSIST', KEYS[1])", `PERSIST removes the expiry of KEYS[1] "lock"`, ""},
		"a key written only after it is read": {
			"    keys: [{name: lock, one_of: [lock]}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\nreturn redis.call('APPEND', KEYS[1], 'x')", "", `ttl-unproven`},
		"a key declared never created": {
			"    keys: [{name: lock, one_of: [lock], creates: false}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\nreturn redis.call('APPEND', KEYS[1], 'x')", "", ""},
		"SET XX never creates": {
			"    keys: [{name: lock, one_of: [lock]}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"return redis.call('SET', KEYS[1], ARGV[1], 'XX', 'KEEPTTL') and 1 or 0", "", ""},
		"KEEPTTL may create a key without one": {
			"    keys: [{name: lock, one_of: [lock]}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"return redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL') and 1 or 0", `SET ... KEEPTTL gives a new key none`, ""},
		"a dynamic key without its expiry": {
			"    keys: [{name: locks, one_of: [lock], repeat: {max: 4}}]\n    argv: [{name: owner, type: token}]\n" + reply,
			"for i = 1, #KEYS do redis.call('SETNX', KEYS[i], ARGV[1]) end\nreturn 1", "", `ttl-unproven`},
		"a stream trimmed within its bound": {
			"    keys: [{name: events, one_of: [events]}]\n    argv: [{name: keep, type: int, max_len_of: events}, {name: msg, type: string, max_bytes: 64}]\n" + reply,
			"redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'm', ARGV[2])\nreturn redis.call('XTRIM', KEYS[1], 'MAXLEN', 1000)", "", ""},
		"a stream trimmed above its bound": {
			"    keys: [{name: events, one_of: [events]}]\n    argv: [{name: msg, type: string, max_bytes: 64}]\n" + reply,
			"redis.call('XADD', KEYS[1], 'MAXLEN', 5000, '*', 'm', ARGV[1])\nreturn 1", `XADD ... MAXLEN 5000 keeps up to 5000 entries of KEYS[1] "events", above key "events"'s max_len 1000`, ""},
		"a stream trimmed by an argument above its bound": {
			"    keys: [{name: events, one_of: [events]}]\n    argv: [{name: keep, type: int, min: 1, max: 100000}, {name: msg, type: string, max_bytes: 64}]\n" + reply,
			"redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'm', ARGV[2])\nreturn 1", `keeps up to 100000 entries`, ""},
		"a stream trimmed by a computed count": {
			"    keys: [{name: events, one_of: [events]}]\n    argv: [{name: msg, type: string, max_bytes: 64}]\n" + reply,
			"local n = tonumber(ARGV[1]) or 10\nredis.call('XADD', KEYS[1], 'MAXLEN', n * 2, '*', 'm', ARGV[1])\nreturn 1", "", `bound-unproven`},
		"a list trimmed to its bound": {
			"    keys: [{name: wait, one_of: [wait]}]\n    argv: [{name: id, type: uuid}]\n" + reply,
			"redis.call('LPUSH', KEYS[1], ARGV[1])\nredis.call('LTRIM', KEYS[1], 0, 99)\nreturn redis.call('LTRIM', KEYS[1], -100, -1)", "", ""},
		"a list trimmed above its bound": {
			"    keys: [{name: wait, one_of: [wait]}]\n    argv: [{name: id, type: uuid}]\n" + reply,
			"redis.call('LPUSH', KEYS[1], ARGV[1])\nreturn redis.call('LTRIM', KEYS[1], 0, 100)", `LTRIM 0 100 keeps 101 elements of KEYS[1] "wait", above key "wait"'s max_len 100`, ""},
		"a list trim that keeps everything": {
			"    keys: [{name: wait, one_of: [wait]}]\n    argv: [{name: id, type: uuid}]\n" + reply,
			"redis.call('LPUSH', KEYS[1], ARGV[1])\nreturn redis.call('LTRIM', KEYS[1], 0, -1)", `LTRIM 0 -1 keeps a number of elements that depends on the list's length`, ""},
		"a list trimmed by max_len_of, one too many": {
			"    keys: [{name: wait, one_of: [wait]}]\n    argv: [{name: keep, type: int, max_len_of: wait}, {name: id, type: uuid}]\n" + reply,
			"redis.call('LPUSH', KEYS[1], ARGV[2])\nreturn redis.call('LTRIM', KEYS[1], 0, ARGV[1])", `LTRIM 0 100 keeps 101 elements`, ""},
	} {
		t.Run(name, func(t *testing.T) {
			spec := langSpec(t, tc.sig)
			files := fstest.MapFS{"a/s.lua": {Data: []byte(tc.lua)}}
			srcs, problems := compiler.Check(spec, files, "lua")
			var got []string
			for _, p := range problems {
				got = append(got, p.Err.Error())
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("refused:\n%s", strings.Join(got, "\n"))
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Fatalf("problems:\n%s\nwant one containing %q", strings.Join(got, "\n"), tc.want)
			}
			if tc.want != "" {
				return
			}
			var unproven []string
			for _, u := range srcs["s"].Unproven {
				unproven = append(unproven, u.Rule+": "+u.Err.Error())
			}
			if tc.unproven == "" && len(unproven) > 0 || tc.unproven != "" && (len(unproven) != 1 || !strings.Contains(unproven[0], tc.unproven)) {
				t.Fatalf("unproven:\n%s\nwant %q", strings.Join(unproven, "\n"), tc.unproven)
			}
		})
	}
}
