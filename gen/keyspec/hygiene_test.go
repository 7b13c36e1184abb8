package keyspec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hanchat/luagen/gen/keyspec"
)

const minimal = `version: 1
instances:
  a:
    topology: standalone
    dbs:
      db0: {index: 0, url_env: A_URL, user: u}
users:
  u:
    instance: a
    select: {allow: false, reason: one database}
    key_prefixes: [{prefix: "t:", source: test}]
`

// Input the parser once accepted silently, or refused without a line (issue
// 12): each is refused, naming file and line.
func TestHostileSpecsAreRefusedAtTheirLine(t *testing.T) {
	if _, err := keyspec.Parse("keyspec.yaml", []byte(minimal)); err != nil {
		t.Fatalf("the minimal spec: %v", err)
	}
	for name, c := range map[string]struct{ src, want string }{
		"second document":         {minimal + "---\nversion: 1\n", "keyspec.yaml:12: a second YAML document"},
		"empty second document":   {minimal + "---\n", "keyspec.yaml:12: a second YAML document"},
		"second after end marker": {minimal + "...\n---\nkeys: {}\n", "keyspec.yaml:12: a second YAML document"},
		"control character":       {minimal + "# a\x01b\n", "keyspec.yaml:12: control character U+0001"},
		"escape sequence":         {minimal + "# \x1b[2J\n", "keyspec.yaml:12: control character U+001B"},
		"NUL":                     {strings.Replace(minimal, "standalone", "stand\x00alone", 1), "keyspec.yaml:4: control character U+0000"},
		"not UTF-8":               {minimal + "# \xff\n", "keyspec.yaml:12: byte 0xff is not UTF-8"},
		"bidi override":           {strings.Replace(minimal, `"t:"`, "\"t:\u202e\"", 1), "keyspec.yaml:11: invisible or bidirectional-text control U+202E"},
		"zero-width space":        {strings.Replace(minimal, "user: u}", "user: u\u200b}", 1), "keyspec.yaml:6: invisible or bidirectional-text control U+200B"},
		"unknown anchor":          {minimal + "keys: *nowhere\n", "keyspec.yaml:12: unknown anchor 'nowhere' referenced"},
		"bad binary":              {minimal + "enums: !!binary abc\n", "keyspec.yaml:12: !!binary value"},
	} {
		_, err := keyspec.Parse("keyspec.yaml", []byte(c.src))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, keyspec.ErrInvalid) {
			t.Errorf("%s: %v\nwant %s", name, err, c.want)
		}
	}
	// A leading "---" starts the one document; a BOM is not a control.
	for _, ok := range []string{"---\n" + minimal, "# c\n---\n" + minimal, "\ufeff" + minimal, minimal + "...\n"} {
		if _, err := keyspec.Parse("keyspec.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok[:6], err)
		}
	}
}

// A spec over MaxSpecBytes is refused before it is decoded, at the line where
// it passes the cap; Load reads no more than the cap of a larger file, and
// refuses what is not a regular file.
func TestSpecSizeCap(t *testing.T) {
	pad := strings.Repeat("# padding to pass the cap, one comment line after another\n", keyspec.MaxSpecBytes/58+10)
	big := minimal + pad
	_, err := keyspec.Parse("keyspec.yaml", []byte(big))
	if err == nil || !strings.Contains(err.Error(), "size cap of 1048576 bytes") || !strings.HasPrefix(err.Error(), "keyspec.yaml:") || strings.HasPrefix(err.Error(), "keyspec.yaml:1:") {
		t.Fatalf("a spec over the cap: %v", err)
	}
	if _, err := keyspec.Parse("keyspec.yaml", []byte(minimal+pad[:keyspec.MaxSpecBytes-len(minimal)])); err != nil {
		t.Fatalf("a spec of exactly the cap: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "keyspec.yaml")
	// 50 MB, as in the issue: refused after reading 1 MiB.
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(minimal)
	chunk := []byte(strings.Repeat("# x\n", 1<<18))
	for i := 0; i < 50; i++ {
		f.Write(chunk)
	}
	f.Close()
	if _, err := keyspec.Load(path); err == nil || !strings.Contains(err.Error(), "size cap") {
		t.Fatalf("a 50 MB spec: %v", err)
	}
	if _, err := keyspec.Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory: %v", err)
	}
	if _, err := keyspec.Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("/dev/zero: %v", err)
	}
}
