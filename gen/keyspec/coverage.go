package keyspec

// CoverageFloor is the least share, in percent, of the Lua lines and branches of
// an instance's scripts that the tests must run.
type CoverageFloor struct {
	Pos
	Lines    int // 0..100; 0: no floor on lines
	Branches int // 0..100; 0: no floor on branches
}

type rawCoverageFloor struct {
	Lines    *int `yaml:"lines"`
	Branches *int `yaml:"branches"`
}

// coverageFloor resolves an instance's coverage_floor.
func (p *parser) coverageFloor(path, entry string, r *rawCoverageFloor) *CoverageFloor {
	if r == nil {
		return nil
	}
	cp := path + ".coverage_floor"
	f := &CoverageFloor{Pos: p.pos(cp)}
	if r.Lines == nil && r.Branches == nil {
		p.errf(cp, entry, "coverage_floor: set lines, branches or both (percent of the instance's Lua the tests run)")
	}
	for _, v := range []struct {
		name string
		in   *int
		out  *int
	}{{"lines", r.Lines, &f.Lines}, {"branches", r.Branches, &f.Branches}} {
		if v.in == nil {
			continue
		}
		if *v.in < 0 || *v.in > 100 {
			p.errf(cp+"."+v.name, entry, "coverage_floor %s %d: want a percentage 0..100", v.name, *v.in)
		}
		*v.out = *v.in
	}
	return f
}
