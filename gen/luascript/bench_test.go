package luascript_test

import (
	"os"
	"testing"

	"github.com/hanchat/luagen/gen/luascript"
)

// BenchmarkAnalyze reads one script (gen/luascript/testdata): the 60-line
// limiter with a helper that bench/cmd/manyscripts copies a thousand times for
// the generate timing of BENCHMARKS.md, the 7-line script of the earlier
// measurement, and a job-queue idiom with derived keys and nested helpers.
func BenchmarkAnalyze(b *testing.B) {
	for _, name := range []string{"limiter60.lua", "short7.lua", "reading/helper_keys.lua", "reading/derived_job.lua"} {
		src, err := os.ReadFile("testdata/" + name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := luascript.Analyze(name, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
