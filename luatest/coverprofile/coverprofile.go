// Package coverprofile is the format of the Lua coverage luatest records while
// tests run (LUAGEN_COVER=DIR): for each script (by the SHA1 of its source)
// and test process, a description of its counting points (DIR/<sha1>-*.json)
// and their counters (DIR/<sha1>-*.cnt, one uint64 per point in the machine's byte order,
// kept in a memory-mapped file so that they survive the process whatever way
// it ends). Read merges every process's counters; luagen cover reports them.
package coverprofile

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Version is the version of the format; Read refuses another.
const Version = 2

// Kinds of points.
const (
	// Statement: a statement starts on Line; its counter counts its runs.
	Statement = "stmt"
	// Branch: one arm of an if (Arm "then" or "else"; an absent else counts
	// as an arm) whose condition is on Line; its counter counts the times the
	// arm was taken.
	Branch = "branch"
)

// Point is one counter of a script.
type Point struct {
	Line int    `json:"line"`
	Kind string `json:"kind"`
	Arm  string `json:"arm,omitempty"`
	// Same is the number (1-based) of the point whose counter this one reads
	// (an arm and its first statement run together); 0: its own counter.
	Same int `json:"same,omitempty"`
}

// Meta describes one script's points, written once per process.
type Meta struct {
	Version int     `json:"version"`
	SHA1    string  `json:"sha1"`
	File    string  `json:"file"` // the name the script was loaded under
	Points  []Point `json:"points"`
}

// Script is one script's merged counters.
type Script struct {
	SHA1   string
	Files  []string // every name it was loaded under, sorted
	Points []Point
	Counts []uint64 // summed over every process, one per point
}

// Profile is every script a coverage directory holds, by SHA1.
type Profile struct {
	Scripts map[string]*Script
	// Processes is how many test processes wrote counters.
	Processes int
}

// ErrEmpty: the directory holds no coverage.
var ErrEmpty = errors.New("no Lua coverage recorded")

// MetaPath and CountsPath are the files of one script in one process; stem
// is "<sha1>-<process id>-<sequence>".
func MetaPath(dir, stem string) string   { return filepath.Join(dir, stem+".json") }
func CountsPath(dir, stem string) string { return filepath.Join(dir, stem+".cnt") }

// WriteMeta writes a script's description.
func WriteMeta(dir, stem string, m Meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := MetaPath(dir, stem) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, MetaPath(dir, stem))
}

// Read merges every script's counters in dir. A description without its
// counters (a process that stopped between the two files) is skipped; files of
// another version, or counters that do not fit their description, are errors
// naming the file.
func Read(dir string) (*Profile, error) {
	metas, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	p := &Profile{Scripts: map[string]*Script{}}
	procs := map[string]bool{}
	for _, mp := range metas {
		b, err := os.ReadFile(mp)
		if err != nil {
			return nil, err
		}
		var m Meta
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %v", mp, err)
		}
		if m.Version != Version {
			return nil, fmt.Errorf("%s: coverage format version %d, want %d (recorded by another luagen: record again)", mp, m.Version, Version)
		}
		stem := strings.TrimSuffix(filepath.Base(mp), ".json")
		cnt, err := os.ReadFile(CountsPath(dir, stem))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(cnt) != 8*len(m.Points) {
			return nil, fmt.Errorf("%s: %d bytes of counters for %d points", CountsPath(dir, stem), len(cnt), len(m.Points))
		}
		if parts := strings.Split(stem, "-"); len(parts) >= 2 {
			procs[parts[1]] = true
		}
		s := p.Scripts[m.SHA1]
		if s == nil {
			s = &Script{SHA1: m.SHA1, Points: m.Points, Counts: make([]uint64, len(m.Points))}
			p.Scripts[m.SHA1] = s
		} else if !slices.Equal(s.Points, m.Points) {
			return nil, fmt.Errorf("%s: the points of script %s differ from another process's (recorded by another luagen: record again)", mp, m.SHA1)
		}
		for i := range s.Counts {
			s.Counts[i] += binary.NativeEndian.Uint64(cnt[8*i:])
		}
		if !slices.Contains(s.Files, m.File) {
			s.Files = append(s.Files, m.File)
			sort.Strings(s.Files)
		}
	}
	for _, s := range p.Scripts {
		for i, pt := range s.Points {
			if pt.Same > 0 && pt.Same <= len(s.Counts) {
				s.Counts[i] = s.Counts[pt.Same-1]
			}
		}
	}
	p.Processes = len(procs)
	if len(p.Scripts) == 0 {
		return nil, fmt.Errorf("%s: %w (run go test with LUAGEN_COVER=%s)", dir, ErrEmpty, dir)
	}
	return p, nil
}
