// Package cover reports the Lua coverage the tests recorded (luatest with
// LUAGEN_COVER=DIR, luatest/coverprofile): per script of the spec, the share of
// its executable lines and of its branches (each arm of each if, an absent else
// counted) that ran, per instance the totals, checked against the instance's
// declared coverage_floor, and an HTML view of the Lua with hit counts.
// Scripts are matched by the SHA1 of their source, so a profile counts only
// the Lua the spec has now.
package cover

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hanchat/luagen/gen/compiler"
	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/luatest/coverprofile"
)

// Report is the coverage of a spec's scripts.
type Report struct {
	Spec      string
	Instances []*Instance
	// Unmatched counts the scripts of the profile whose source no script of
	// the spec has (test scripts, older versions).
	Unmatched int
	Processes int
}

// Instance is one instance's scripts and their totals.
type Instance struct {
	Name    string
	Floor   *keyspec.CoverageFloor
	Scripts []*Script
	Counts
}

// Counts are lines and branches, run and in all.
type Counts struct {
	Lines, LinesRun       int
	Branches, BranchesRun int
}

// LinePercent and BranchPercent are the shares run, in percent (100 when there
// is nothing to run).
func (c Counts) LinePercent() float64   { return percent(c.LinesRun, c.Lines) }
func (c Counts) BranchPercent() float64 { return percent(c.BranchesRun, c.Branches) }

func percent(n, of int) float64 {
	if of == 0 {
		return 100
	}
	return 100 * float64(n) / float64(of)
}

func (c *Counts) add(o Counts) {
	c.Lines += o.Lines
	c.LinesRun += o.LinesRun
	c.Branches += o.Branches
	c.BranchesRun += o.BranchesRun
}

// Script is one script's coverage.
type Script struct {
	Name, File string
	SHA1       string
	Source     []byte
	// Recorded: a test ran (or at least loaded) the script.
	Recorded bool
	// Hits is the run count of each executable line (the most of the
	// statements that start on it).
	Hits map[int]uint64
	// Arms are the branches on each line, in the order of the source.
	Arms map[int][]Arm
	Counts
}

// Arm is one branch and how often it was taken.
type Arm struct {
	Name  string // "then" or "else"
	Count uint64
}

// Build matches the profile with the spec's live scripts.
func Build(spec *keyspec.Spec, srcs map[string]*compiler.Source, p *coverprofile.Profile) (*Report, error) {
	r := &Report{Spec: spec.File, Processes: p.Processes}
	matched := map[string]bool{}
	for _, in := range spec.Instances {
		ir := &Instance{Name: in.Name, Floor: in.CoverageFloor}
		for _, s := range spec.ScriptsOf(in) {
			src := srcs[s.ID]
			if src == nil {
				return nil, fmt.Errorf("script %s: no Lua loaded", s.Name)
			}
			sr := &Script{Name: s.Name, File: src.Info.File, SHA1: src.SHA1, Source: src.Src, Hits: map[int]uint64{}, Arms: map[int][]Arm{}}
			points, counts := []coverprofile.Point(nil), []uint64(nil)
			if rec := p.Scripts[src.SHA1]; rec != nil {
				sr.Recorded, points, counts = true, rec.Points, rec.Counts
				matched[src.SHA1] = true
			} else {
				var err error
				if points, err = coverprofile.PointsOf(src.Src); err != nil {
					return nil, fmt.Errorf("%s: %v", src.Info.File, err)
				}
				counts = make([]uint64, len(points))
			}
			sr.tally(points, counts)
			ir.Scripts = append(ir.Scripts, sr)
			ir.add(sr.Counts)
		}
		sort.Slice(ir.Scripts, func(i, j int) bool { return ir.Scripts[i].Name < ir.Scripts[j].Name })
		r.Instances = append(r.Instances, ir)
	}
	for sha := range p.Scripts {
		if !matched[sha] {
			r.Unmatched++
		}
	}
	return r, nil
}

func (s *Script) tally(points []coverprofile.Point, counts []uint64) {
	for i, pt := range points {
		switch pt.Kind {
		case coverprofile.Statement:
			s.Hits[pt.Line] = max(s.Hits[pt.Line], counts[i])
		case coverprofile.Branch:
			s.Arms[pt.Line] = append(s.Arms[pt.Line], Arm{Name: pt.Arm, Count: counts[i]})
			s.Branches++
			if counts[i] > 0 {
				s.BranchesRun++
			}
		}
	}
	s.Lines = len(s.Hits)
	for _, n := range s.Hits {
		if n > 0 {
			s.LinesRun++
		}
	}
}

// Finding is an instance below its floor.
type Finding struct {
	keyspec.Pos
	Msg string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: coverage-floor: %s", f.File, f.Line, f.Msg)
}

// Check lists each instance below its declared coverage_floor.
func (r *Report) Check() []Finding {
	var out []Finding
	for _, in := range r.Instances {
		f := in.Floor
		if f == nil {
			continue
		}
		var below []string
		if f.Lines > 0 && in.LinePercent() < float64(f.Lines) {
			below = append(below, fmt.Sprintf("lines %.1f%% (%d of %d) below the floor %d%%", in.LinePercent(), in.LinesRun, in.Lines, f.Lines))
		}
		if f.Branches > 0 && in.BranchPercent() < float64(f.Branches) {
			below = append(below, fmt.Sprintf("branches %.1f%% (%d of %d) below the floor %d%%", in.BranchPercent(), in.BranchesRun, in.Branches, f.Branches))
		}
		if len(below) > 0 {
			out = append(out, Finding{Pos: f.Pos, Msg: fmt.Sprintf("instance %s: %s; the least covered: %s", in.Name, strings.Join(below, ", "), leastCovered(in))})
		}
	}
	return out
}

// leastCovered names the instance's three scripts with the most lines not run.
func leastCovered(in *Instance) string {
	s := append([]*Script(nil), in.Scripts...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Lines-s[i].LinesRun > s[j].Lines-s[j].LinesRun })
	var names []string
	for _, x := range s[:min(3, len(s))] {
		names = append(names, fmt.Sprintf("%s (%d lines not run)", x.Name, x.Lines-x.LinesRun))
	}
	return strings.Join(names, ", ")
}

// Text is the report as a table: a line per script, a total per instance.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-32s %17s %17s\n", "instance", "script", "lines", "branches")
	for _, in := range r.Instances {
		for _, s := range in.Scripts {
			note := ""
			if !s.Recorded {
				note = "  (no test ran it)"
			}
			fmt.Fprintf(&b, "%-10s %-32s %s %s%s\n", in.Name, s.Name, cell(s.LinesRun, s.Lines), cell(s.BranchesRun, s.Branches), note)
		}
		floor := ""
		if in.Floor != nil {
			floor = fmt.Sprintf("  floor: lines %d%%, branches %d%%", in.Floor.Lines, in.Floor.Branches)
		}
		fmt.Fprintf(&b, "%-10s %-32s %s %s%s\n", in.Name, "(all scripts)", cell(in.LinesRun, in.Lines), cell(in.BranchesRun, in.Branches), floor)
	}
	return b.String()
}

func cell(n, of int) string {
	return fmt.Sprintf("%9s %6.1f%%", fmt.Sprintf("%d/%d", n, of), percent(n, of))
}
