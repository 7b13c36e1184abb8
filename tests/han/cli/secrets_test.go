package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// marker is in every hostile argument below; no output may show it.
const marker = "Hunter2pwSecret"

// luagen acl with hostile --password-file arguments (issue 12: a malformed one
// was echoed back, blank and one-character passwords were accepted, a
// world-readable file got no warning, a second file for a user silently won):
// each is refused or warned about as the table says, and nothing it prints
// shows any argument's secret. A file with mode bits beyond 0600 is refused
// (issue 21: it only got a warning) unless --allow-readable says so.
func TestPasswordFileArgumentsLeakNothing(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", marker+"-0123456789\n", 0o600)
	open := write("open", marker+"-0123456789\n", 0o644)
	group := write("group", marker+"-0123456789\n", 0o640)
	exec := write("exec", marker+"-0123456789\n", 0o700)
	readOnly := write("read-only", marker+"-0123456789\n", 0o400)
	blank := write("blank", "  \n", 0o600)
	empty := write("empty", "", 0o600)
	one := write("one", "x\n", 0o600)
	short := write("short", "Hunter2\n", 0o600)
	twoLines := write("two", marker+"-0123456789\n"+marker+"-second\n", 0o600)
	spaced := write("spaced", " "+marker+"-0123456789 \n", 0o600)
	base := []string{"acl", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua", "--instance", "vm1"}
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		want  string // in stderr
		aclOK bool   // an aclfile is printed
	}{
		{"the password as the argument", []string{marker}, 2, "--password-file #1: want USER=PATH", false},
		{"no user", []string{"=" + marker}, 2, "--password-file #1: want USER=PATH", false},
		{"no path", []string{"api_backend="}, 2, "--password-file #1: want USER=PATH", false},
		{"the password as the user", []string{marker + "=" + good}, 1, "--password-file #1: its USER is not a user of vm1", false},
		{"the password as the path", []string{"api_backend=" + marker}, 1, "password file of api_backend (--password-file #1): no such file", false},
		{"user=password", []string{"api_backend=" + marker + "-0123456789"}, 1, "no such file", false},
		{"a newline in the path", []string{"api_backend=" + good + "\n" + marker}, 2, "the path holds a control character", false},
		{"a bidi override in the path", []string{"api_backend=" + good + "\u202e" + marker}, 2, "the path holds a control character", false},
		{"blank", []string{"api_backend=" + blank}, 1, "empty or blank", false},
		{"empty", []string{"api_backend=" + empty}, 1, "empty or blank", false},
		{"one character", []string{"api_backend=" + one}, 1, "shorter than 16 bytes", false},
		{"short", []string{"api_backend=" + short}, 1, "shorter than 16 bytes", false},
		{"two lines", []string{"api_backend=" + twoLines}, 1, "control character", false},
		{"spaces around", []string{"api_backend=" + spaced}, 1, "spaces around it", false},
		{"a directory", []string{"api_backend=" + dir}, 1, "not a regular file", false},
		{"twice", []string{"api_backend=" + good, "api_backend=" + good}, 2, "--password-file #2: user api_backend is named again (first by #1)", false},
		{"a second user given twice", []string{"api_backend=" + good, "vm1_loader=" + good, "vm1_loader=" + open}, 2, "--password-file #3: user vm1_loader is named again (first by #2)", false},
		{"world-readable", []string{"api_backend=" + open}, 1, "password file of api_backend (--password-file #1) has mode 0644, beyond 0600 (readable by its group or others, or executable): chmod 600 it, or pass --allow-readable", false},
		{"group-readable", []string{"vm1_operator=" + group}, 1, "has mode 0640, beyond 0600", false},
		{"executable", []string{"api_backend=" + exec}, 1, "has mode 0700, beyond 0600", false},
		{"world-readable, allowed", []string{"--allow-readable", "api_backend=" + open}, 0, "warning: password file of api_backend (--password-file #1) has mode 0644, beyond 0600: allowed by --allow-readable", true},
		{"read-only for its owner", []string{"api_backend=" + readOnly}, 0, "", true},
		{"fine", []string{"api_backend=" + good}, 0, "", true},
	} {
		args := append([]string{}, base...)
		for _, a := range c.args {
			if strings.HasPrefix(a, "--") {
				args = append(args, a)
				continue
			}
			args = append(args, "--password-file", a)
		}
		code, stdout, stderr := luagen(t, "", args...)
		if code != c.code || !strings.Contains(stderr, c.want) || (stdout != "") != c.aclOK {
			t.Errorf("%s: exit %d (want %d), stdout %d bytes, stderr:\n%s\nwant %q", c.name, code, c.code, len(stdout), stderr, c.want)
		}
		if strings.Contains(stdout+stderr, marker) || strings.Contains(stdout+stderr, "Hunter2") {
			t.Errorf("%s: an argument's secret reached the output:\n%s%s", c.name, stdout, stderr)
		}
	}
}
