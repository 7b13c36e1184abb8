// Package cli runs the luagen command on HAN's and Elang's spec (keyspec.yaml,
// lua/, generated/ at the repository's top): the command-line checks that used
// to sit beside cmd/luagen, whose own tests run on fixtures of the tool. The
// tests run a luagen binary built once from ../../../cmd/luagen.
package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Exit statuses of luagen (cmd/luagen/run.go).
const (
	exitOK      = 0
	exitProblem = 1
	exitUsage   = 2
)

// bin is the luagen binary TestMain builds.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "luagen-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "luagen")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/luagen").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build cmd/luagen: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs luagen with args in this directory and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		fmt.Fprintln(stderr, err)
		return -1
	}
}

func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, "../../../lua", filepath.Join(dir, "lua"))
	src, err := os.ReadFile("../../../keyspec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keyspec.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

func luagen(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{}, args...)
	if dir != "" {
		full = append(full, "--spec", filepath.Join(dir, "keyspec.yaml"), "--lua", filepath.Join(dir, "lua"))
		if args[0] != "lint" {
			full = append(full, "--out", filepath.Join(dir, "generated"))
		}
	}
	code := run(full, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}
