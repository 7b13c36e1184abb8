package sizing_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/sizing"
	"github.com/hanchat/luagen/internal/redistest"
)

// loadAverage is /proc/loadavg's first three numbers, for the record of how
// busy the machine was.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// saturate is one rated script's check: its predicted saturation (from
// Measure's report) against what a real redis-server configured as the
// script's server serves under SaturateOptions' load.
type saturated struct {
	file, script, kind  string
	predicted, measured float64
	serverBusy          float64 // server main-thread CPU / wall
	predictedCPU        float64 // µs a call, scratch
	measuredCPU         float64 // µs a call, saturated
}

// pairRounds is how many (prediction, saturation) pairs each script gets;
// each side of the table is the median of its rounds.
const pairRounds = 3

func saturateFile(tb testing.TB, spec *keyspec.Spec, srcs map[string]*compiler.Source, path string, calls int) []saturated {
	tb.Helper()
	ctx := context.Background()
	f, err := sizing.Load(path, spec)
	if err != nil {
		tb.Fatal(err)
	}
	var out []saturated
	for _, r := range f.Rates {
		one := *f
		one.Rates = []*sizing.Rate{r}
		srv := r.Entry.Key.DB.ServerOf()
		policy := srv.EvictionPolicy
		if policy == "" {
			policy = "noeviction"
		}
		s := redistest.Start(tb, redistest.WithConfig("maxmemory-policy "+policy, "maxmemory 64gb", "enable-debug-command local"))
		var preds, meas, busy, predCPU, measCPU []float64
		for round := 0; round < pairRounds; round++ {
			rates, err := sizing.MeasureRates(ctx, spec, srcs, &one, sizing.Options{})
			if err != nil {
				tb.Fatal(err)
			}
			if err := s.Admin().FlushAll(ctx).Err(); err != nil {
				tb.Fatal(err)
			}
			sat, err := sizing.Saturate(ctx, s.Addr, spec, srcs, &one, r.Script.Name, sizing.SaturateOptions{Calls: calls})
			if err != nil {
				tb.Fatal(err)
			}
			preds = append(preds, rates[0].SaturationCallsPerSecond)
			predCPU = append(predCPU, rates[0].CPUUsecPerCall)
			meas = append(meas, sat.CallsPerSecond)
			busy = append(busy, sat.ServerCPU.Seconds()/sat.Wall.Seconds())
			measCPU = append(measCPU, 1e6*sat.ServerCPU.Seconds()/float64(sat.Calls))
		}
		s.Stop()
		out = append(out, saturated{file: path, script: r.Script.Name, kind: r.Script.Kind,
			predicted: median(preds), measured: median(meas), serverBusy: median(busy), predictedCPU: median(predCPU), measuredCPU: median(measCPU)})
	}
	return out
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkThroughput checks luagen sizing's throughput prediction: for every
// rated script of HAN's and Elang's cardinality files it saturates a real
// redis-server with the script's calls (each branch in its share, pipelined 16
// deep from 32 connections) and compares what it served with the prediction
// of the same run (1e6 / the CPU µs per call measured on the scratch server):
// the calls per second of wall time, and the calls per second of the server's
// CPU time (which a busy shared machine does not distort); it fails when the
// latter is more than 20% off, and reports both with the share of a core the
// server got. Run it once:
//
//	go test ./gen/sizing -run '^$' -bench Throughput -benchtime 1x -timeout 30m
func BenchmarkThroughput(b *testing.B) {
	redistest.Need(b)
	spec, err := keyspec.Load("../../../keyspec.yaml")
	if err != nil {
		b.Fatal(err)
	}
	srcs, err := compiler.Load(spec, os.DirFS("../../../lua"), "lua")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		start := time.Now()
		before := loadAverage()
		var all []saturated
		for _, f := range []string{"../../../sizing/vm1.yaml", "../../../sizing/vm2.yaml", "../../../sizing/elang.yaml"} {
			if _, err := os.Stat(f); err != nil {
				continue
			}
			all = append(all, saturateFile(b, spec, srcs, f, 60000)...)
		}
		var tbl strings.Builder
		fmt.Fprintf(&tbl, "| file | family | script | CPU µs/call, scratch | saturated | predicted calls/s (1 core) | measured calls/s per server CPU-second | off | measured calls/s (wall) | server busy | off (wall) |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		worst, worstWall := 0.0, 0.0
		for _, s := range all {
			perCPU := 1e6 / s.measuredCPU
			dev := (s.predicted - perCPU) / perCPU
			devWall := (s.predicted - s.measured) / s.measured
			worst, worstWall = max(worst, abs(dev)), max(worstWall, abs(devWall))
			fmt.Fprintf(&tbl, "| %s | %s | %s | %.1f | %.1f | %.0f | %.0f | %+.1f%% | %.0f | %.0f%% | %+.1f%% |\n", strings.TrimPrefix(s.file, "../../../"), s.kind, s.script,
				s.predictedCPU, s.measuredCPU, s.predicted, perCPU, 100*dev, s.measured, 100*s.serverBusy, 100*devWall)
			// The check that holds on a shared machine: the calls a server's
			// CPU-second serves under saturation. The wall-clock rate equals it
			// when the server gets its whole core (server busy near 100%).
			if dev > 0.20 || dev < -0.20 {
				b.Errorf("%s: predicted %.0f calls a CPU-second, measured %.0f (%+.1f%%)", s.script, s.predicted, perCPU, 100*dev)
			}
		}
		b.ReportMetric(100*worst, "worst_off_%")
		b.ReportMetric(100*worstWall, "worst_wall_off_%")
		b.Logf("\n%s\nload average before %s, after %s; %s", tbl.String(), before, loadAverage(), time.Since(start).Round(time.Second))
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
