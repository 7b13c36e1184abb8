package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// No file git tracks is over 1 MB or a compiled program (issue 24: an 18 MB
// test binary and a 2.7 MB command were committed by mistake): build outputs
// belong in .gitignore.
func TestNoLargeOrBinaryFilesTracked(t *testing.T) {
	out, err := exec.Command("git", "-C", "..", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		p := filepath.Join("..", string(name))
		info, err := os.Lstat(p)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		if info.Size() > 1<<20 {
			t.Errorf("%s is %d bytes, over 1 MB", name, info.Size())
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		if n == 4 && bytes.Equal(head, []byte("\x7fELF")) {
			t.Errorf("%s is a compiled program (ELF): ignore it in .gitignore", name)
		}
	}
}
