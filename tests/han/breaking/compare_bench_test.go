package breaking_test

import (
	"context"
	"testing"

	"github.com/hanchat/luagen/gen/breaking"
	"github.com/hanchat/luagen/gen/diff"
	"github.com/hanchat/luagen/gen/snapshot"
)

// BenchmarkCompareHAN is the work of luagen breaking and luagen diff on HAN's
// spec against itself (--against the repository's directory), in process:
// both revisions parsed, every script compiled twice, every aclfile derived
// twice. The whole-process time (what CI waits for) is
// in BENCHMARKS.md.
func BenchmarkCompareHAN(b *testing.B) {
	const spec, lua = "../../../keyspec.yaml", "../../../lua"
	load := func(b *testing.B) (old, cur *snapshot.Snapshot) {
		cur, err := snapshot.Working(spec, lua)
		if err != nil {
			b.Fatal(err)
		}
		old, err = snapshot.At(context.Background(), "../../..", spec, lua)
		if err != nil {
			b.Fatal(err)
		}
		return old, cur
	}
	b.Run("breaking", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			old, cur := load(b)
			if _, err := breaking.Compare(old, cur); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			old, cur := load(b)
			diff.Compare(old, cur)
		}
	})
}
