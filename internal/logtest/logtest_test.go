package logtest_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hanchat/luagen/internal/logtest"
)

func TestRecorderKeepsRecordsAndAttrs(t *testing.T) {
	log, rec := logtest.New()
	log.With("component", "sub").WithGroup("conn").Warn("lost", "err", errors.New("EOF"), "n", 3)
	log.Info("other")
	got := rec.Records("lost")
	if len(got) != 1 {
		t.Fatalf("%d records, want 1", len(got))
	}
	r := got[0]
	if r.Level != slog.LevelWarn || r.Attrs["component"] != "sub" || r.Attrs["conn.err"] != "EOF" || r.Attrs["conn.n"] != "3" || r.Time.IsZero() {
		t.Fatalf("record %+v", r)
	}
	if line := r.Line(); !strings.HasPrefix(line, "lost ") || !strings.Contains(line, "conn.err=EOF") {
		t.Fatalf("line %q", line)
	}
	if n := len(rec.Records("")); n != 2 {
		t.Fatalf("%d records in all, want 2", n)
	}
}

func TestRecorderUnderConcurrentLoggers(t *testing.T) {
	log, rec := logtest.New()
	var wg sync.WaitGroup
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				log.Info("m", "i", i)
			}
		}()
	}
	wg.Wait()
	if n := len(rec.Records("m")); n != 1000 {
		t.Fatalf("%d records, want 1000", n)
	}
}
