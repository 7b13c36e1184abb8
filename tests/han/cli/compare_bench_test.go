package cli

import (
	"io"
	"os/exec"
	"testing"
)

// BenchmarkCompareHAN runs luagen breaking and luagen diff on HAN's spec
// against HEAD of this repository (read with git: rev-parse, ls-tree,
// archive), as make test does against HEAD~1: both revisions parsed, every
// script compiled twice, every aclfile derived twice. The whole-process time
// (what CI waits for) is in BENCHMARKS.md.
func BenchmarkCompareHAN(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git on PATH")
	}
	for _, cmd := range []string{"breaking", "diff"} {
		b.Run(cmd, func(b *testing.B) {
			args := []string{cmd, "--against", "HEAD", "--spec", "../../../keyspec.yaml", "--lua", "../../../lua"}
			if code := run(args, io.Discard, io.Discard); code != exitOK {
				b.Fatalf("luagen %s: exit %d", cmd, code)
			}
			b.ReportAllocs()
			for b.Loop() {
				run(args, io.Discard, io.Discard)
			}
		})
	}
}
