package acl_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hanchat/luagen/gen/acl"
	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
)

func derive(t *testing.T, specSrc string, lua fstest.MapFS, instance string, pw map[string]string) ([]acl.User, []string, error) {
	t.Helper()
	spec, err := keyspec.Parse("keyspec.yaml", []byte(specSrc))
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, lua, "lua")
	if err != nil {
		t.Fatal(err)
	}
	return acl.Derive(spec, spec.Instance(instance), srcs, pw)
}

const small = `version: 1
instances:
  a:
    topology: standalone
    dbs:
      db0: {index: 0, url_env: A_URL, user: u}
      db1: {index: 1, url_env: A_RT_URL, user: u}
users:
  u:
    instance: a
    select: {allow: true, reason: db1}
    key_prefixes:
      - {prefix: "t:read:", seed: test}
      - {prefix: "t:write:", seed: test}
      - {prefix: "t:idle:", seed: test}
    channel_prefixes:
      - {prefix: "t:news", seed: test}
    extra_commands:
      - {command: "client|setname", reason: operators name connections}
keys:
  r:
    db: a.db0
    kind: cache
    pattern: "t:read:{id}"
    params: {id: {type: uuid}}
    value: [string]
    ttl: {rule: fixed, value: 1m}
  w:
    db: a.db1
    kind: cache
    pattern: "t:write:{id}"
    params: {id: {type: uuid}}
    value: [string]
    ttl: {rule: fixed, value: 1m}
channels:
  news:
    instance: a
    pattern: "t:news"
    max_bytes: 10
scripts:
  look:
    instance: a
    kind: cache
    read_only: true
    keys: [{name: k, one_of: [r]}]
    reply: {type: string, name: v}
  put:
    instance: a
    kind: cache
    keys: [{name: k, one_of: [w]}]
    reply: {type: int, name: n}
`

var smallLua = fstest.MapFS{
	"a/look.lua": {Data: []byte("#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])")},
	"a/put.lua":  {Data: []byte("local t = redis.call('TIME')\nredis.call('SET', KEYS[1], t[1], 'PX', 60000)\nreturn 1")},
}

func TestDeriveIsLeastPrivilege(t *testing.T) {
	users, warnings, err := derive(t, small, smallLua, "a", map[string]string{"u": "#abc", "a_loader": "#def", "a_operator": "#012", "a_monitor": "#345"})
	if err != nil {
		t.Fatal(err)
	}
	got := acl.Render(users)
	want := acl.DefaultLine + "\n" +
		"user u reset on #abc %R~t:read:* ~t:write:* resetchannels &t:news -@all " +
		"+client|setname +evalsha +evalsha_ro +get +ping +publish +select +set +subscribe +time +unsubscribe\n" +
		"user a_loader reset on #def resetchannels -@all +ping +script|load\n" +
		"user a_operator reset on #012 resetchannels -@all +function|kill +ping +script|kill\n" +
		"user a_monitor reset on #345 resetchannels -@all +client|list +ping\n"
	if got != want {
		t.Fatalf("aclfile:\n%s\nwant:\n%s", got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "t:idle:* is taken by no script") {
		t.Fatalf("warnings: %v", warnings)
	}
}

func TestDeriveWithoutPasswordWarns(t *testing.T) {
	users, warnings, err := derive(t, small, smallLua, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(users[1].Line(), "#") || strings.Contains(users[1].Line(), "nopass") {
		t.Fatalf("a user without a password file got one: %s", users[1].Line())
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "user u has no password file: it cannot log in") {
		t.Fatalf("warnings: %v", warnings)
	}
}

// A script calling a command no ACL grants is refused by the compiler, and a
// Source that did not come through Load (compiler.Check returns them with their
// problems) makes Derive refuse too: no grant comes from a refused script.
func TestDeriveRefusesDangerousCommands(t *testing.T) {
	lua := fstest.MapFS{
		"a/look.lua": smallLua["a/look.lua"],
		"a/put.lua":  {Data: []byte("redis.call('FLUSHDB')\nreturn redis.call('SET', KEYS[1], 1, 'PX', 1)")},
	}
	spec, err := keyspec.Parse("keyspec.yaml", []byte(small))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compiler.Load(spec, lua, "lua"); err == nil || !strings.Contains(err.Error(), "lua/a/put.lua:1: FLUSHDB is never granted") {
		t.Fatalf("Load: %v", err)
	}
	srcs, _ := compiler.Check(spec, lua, "lua")
	users, _, err := acl.Derive(spec, spec.Instance("a"), srcs, nil)
	if !errors.Is(err, acl.ErrRefused) || !strings.Contains(err.Error(), "lua/a/put.lua:1: FLUSHDB") || users != nil {
		t.Fatalf("Derive: %v, users %v", err, users)
	}
}

// A Source changed after Load (its reading no longer that of its Lua) grants
// nothing either: Derive reads the Lua again.
func TestDeriveReadsTheLuaAgain(t *testing.T) {
	spec, err := keyspec.Parse("keyspec.yaml", []byte(small))
	if err != nil {
		t.Fatal(err)
	}
	srcs, err := compiler.Load(spec, smallLua, "lua")
	if err != nil {
		t.Fatal(err)
	}
	srcs["put"].Src = []byte("redis.call('CLIENT', 'KILL', 'TYPE', 'normal')\nreturn redis.call('SET', KEYS[1], 1, 'PX', 1)")
	users, _, err := acl.Derive(spec, spec.Instance("a"), srcs, nil)
	if !errors.Is(err, acl.ErrRefused) || !strings.Contains(err.Error(), "lua/a/put.lua:1: CLIENT KILL inside a script") || users != nil {
		t.Fatalf("Derive: %v, users %v", err, users)
	}
}

// Every bypass fixture of the compiler (gen/compiler/testdata/bypass) makes
// Derive refuse and emit no user; the accepted one is granted exactly its
// commands, a subcommand as cmd|sub and never its container.
func TestDeriveGrantsNothingFromABypass(t *testing.T) {
	spec, err := keyspec.Load("../compiler/testdata/bypass/keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../compiler/testdata/bypass/*.lua")
	if len(files) < 20 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			srcs, problems := compiler.Check(spec, fstest.MapFS{"a/s.lua": {Data: src}}, "lua")
			users, _, err := acl.Derive(spec, spec.Instance("a"), srcs, nil)
			if name == "accepted" {
				if len(problems) > 0 || err != nil {
					t.Fatalf("problems %v, Derive: %v", problems, err)
				}
				want := "user u reset on ~t:* resetchannels &t:* -@all +evalsha +object|encoding +pexpire +ping +publish +subscribe +unsubscribe +xread +zadd +zrem +zunionstore"
				if got := users[1].Line(); got != want {
					t.Fatalf("grants:\n%s\nwant:\n%s", got, want)
				}
				return
			}
			if len(problems) == 0 {
				t.Fatal("the compiler accepts a bypass")
			}
			if err == nil || users != nil {
				t.Fatalf("Derive granted %v from a refused script (err %v)", users, err)
			}
		})
	}
}

func TestHashPassword(t *testing.T) {
	a, err := acl.HashPassword([]byte("s3cret-0123456789\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := acl.HashPassword([]byte("s3cret-0123456789"))
	if a != b || !regexp.MustCompile(`^#[0-9a-f]{64}$`).MatchString(a) || strings.Contains(a, "s3cret") {
		t.Fatalf("hash %q / %q", a, b)
	}
	for name, bad := range map[string]string{
		"empty": "", "newline": "\n", "blank": "   \t  \n", "one character": "x\n", "short": "s3cret-01234567",
		"spaces around": " s3cret-0123456789 \n", "two lines": "s3cret-0123456789\nsecond-line-0123\n",
		"NUL": "s3cret-01234\x0056789", "tab inside": "s3cret-0123\t456789",
	} {
		_, err := acl.HashPassword([]byte(bad))
		if !errors.Is(err, acl.ErrWeakPassword) {
			t.Errorf("%s: %v, want ErrWeakPassword", name, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "0123") {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
	}
}

// No user of the spec may take the name of a generated one: its line would grant
// SCRIPT LOAD or SCRIPT KILL besides the spec's grants.
func TestDeriveRefusesAReservedUserName(t *testing.T) {
	for _, name := range []string{"a_loader", "a_operator", "a_monitor"} {
		src := strings.ReplaceAll(small, "user: u}", "user: "+name+"}")
		src = strings.Replace(src, "users:\n  u:\n", "users:\n  "+name+":\n", 1)
		_, _, err := derive(t, src, smallLua, "a", nil)
		if !errors.Is(err, acl.ErrReservedUser) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want ErrReservedUser naming it", name, err)
		}
	}
}

// The loader, the operator and the monitor get what their role needs and
// nothing else: no key, no channel, no script run, no other command.
func TestDeriveGeneratedUsers(t *testing.T) {
	users, _, err := derive(t, small, smallLua, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range users {
		got[u.Name] = strings.Join(u.Commands, " ")
		if (u.Name == acl.LoaderUser(spec(t).Instance("a")) || u.Name == "a_operator" || u.Name == acl.MonitorUser(spec(t).Instance("a"))) && (len(u.Keys) > 0 || len(u.Channels) > 0) {
			t.Errorf("%s: keys %v channels %v, want none", u.Name, u.Keys, u.Channels)
		}
	}
	want := map[string]string{"a_loader": "+ping +script|load", "a_operator": "+function|kill +ping +script|kill", "a_monitor": "+client|list +ping"}
	for name, cmds := range want {
		if got[name] != cmds {
			t.Errorf("%s: %q, want %q", name, got[name], cmds)
		}
	}
	if strings.Contains(got["u"], "script|load") || strings.Contains(got["u"], "script|kill") || strings.Contains(got["u"], "client|list") {
		t.Errorf("the application user may load or kill scripts: %s", got["u"])
	}
}

func spec(t *testing.T) *keyspec.Spec {
	t.Helper()
	s, err := keyspec.Parse("keyspec.yaml", []byte(small))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// In functions mode the application user calls functions and cannot run
// scripts by SHA1; it reads the library (FUNCTION LIST, for VerifyLibrary) and
// manages none. The loader loads functions and reads the library back for its
// version, and runs no code: no FCALL, no FCALL_RO (issue 21).
func TestDeriveFunctionsMode(t *testing.T) {
	src := strings.Replace(small, "    topology: standalone\n", "    topology: standalone\n    mode: functions\n", 1)
	users, _, err := derive(t, src, smallLua, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, u := range users {
		got[u.Name] = strings.Join(u.Commands, " ")
	}
	if !strings.Contains(got["u"], "+fcall +fcall_ro +function|list ") || strings.Contains(got["u"], "evalsha") || strings.Contains(got["u"], "function|load") {
		t.Errorf("u: %s", got["u"])
	}
	if got["a_loader"] != "+function|list +function|load +ping" {
		t.Errorf("a_loader: %s", got["a_loader"])
	}
	if got["a_operator"] != "+function|kill +ping +script|kill" {
		t.Errorf("a_operator: %s", got["a_operator"])
	}
}

// A second user declared with prefixes another user owns got an aclfile line
// with no key pattern and no error (issue 21): a key is granted to the user
// of its database alone, so such a spec is refused at the prefix's line, and
// no aclfile is derived from it.
func TestUserWithAnotherUsersPrefixIsRefused(t *testing.T) {
	src := strings.Replace(small, "keys:\n", `  v:
    instance: a
    select: {allow: false, reason: db0 only}
    key_prefixes:
      - {prefix: "t:read:", reason: a second user of u's keys}
keys:
`, 1)
	spec, err := keyspec.Parse("keyspec.yaml", []byte(src))
	if err == nil {
		srcs, _ := compiler.Load(spec, smallLua, "lua")
		users, warnings, derr := acl.Derive(spec, spec.Instance("a"), srcs, nil)
		t.Fatalf("parsed; Derive: %v, warnings %v, aclfile:\n%s", derr, warnings, acl.Render(users))
	}
	if !errors.Is(err, keyspec.ErrInvalid) || !strings.Contains(err.Error(), `keyspec.yaml:24: user "v": key prefix "t:read:" grants key "r" of a.db0, whose user is u`) {
		t.Fatalf("err = %v", err)
	}
}
