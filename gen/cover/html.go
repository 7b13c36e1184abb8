package cover

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
)

type htmlLine struct {
	N     int
	Hits  string
	Class string // "hit", "miss" or "" (nothing to run)
	Code  string
	Arms  []htmlArm
}

type htmlArm struct {
	Text  string
	Taken bool
}

type htmlScript struct {
	*Script
	Instance, Anchor string
	Rows             []htmlLine // the source, line by line
}

// HTML is the report as one page: a summary table, then each script's Lua
// with the number of times each line ran and each branch was taken.
func (r *Report) HTML() ([]byte, error) {
	var scripts []htmlScript
	for _, in := range r.Instances {
		for _, s := range in.Scripts {
			hs := htmlScript{Script: s, Instance: in.Name, Anchor: "s-" + in.Name + "-" + s.Name}
			for i, code := range strings.Split(strings.TrimRight(string(s.Source), "\n"), "\n") {
				n := i + 1
				l := htmlLine{N: n, Code: code}
				if hits, ok := s.Hits[n]; ok {
					l.Hits = fmt.Sprint(hits)
					l.Class = "miss"
					if hits > 0 {
						l.Class = "hit"
					}
				}
				for _, a := range s.Arms[n] {
					l.Arms = append(l.Arms, htmlArm{Text: fmt.Sprintf("%s ×%d", a.Name, a.Count), Taken: a.Count > 0})
				}
				hs.Rows = append(hs.Rows, l)
			}
			scripts = append(scripts, hs)
		}
	}
	var b bytes.Buffer
	err := htmlTemplate.Execute(&b, struct {
		R       *Report
		Scripts []htmlScript
	}{r, scripts})
	return b.Bytes(), err
}

var htmlTemplate = template.Must(template.New("cover").Funcs(template.FuncMap{
	"pct": func(v float64) string { return fmt.Sprintf("%.1f%%", v) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Lua coverage: {{.R.Spec}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 2em 3em; }
table { border-collapse: collapse; } th, td { padding: 2px 8px; text-align: left; }
table.sum td, table.sum th { border: 1px solid #d5d9e0; } table.sum th { background: #eef1f5; }
table.lua { font: 12.5px/1.35 ui-monospace, monospace; margin-bottom: 2em; }
table.lua td.n { color: #889; text-align: right; } table.lua td.h { text-align: right; color: #556; }
tr.hit td.code { background: #e3f4e8; } tr.miss td.code { background: #fbe3df; }
td.code { white-space: pre; } .arm { font-size: 11px; padding: 0 4px; border-radius: 3px; margin-left: 4px; }
.arm.taken { background: #cdebd6; } .arm.not { background: #f6c7bf; }
.total td { font-weight: bold; }
</style>
</head>
<body>
<h1>Lua coverage</h1>
<p>From <code>{{.R.Spec}}</code> and the counters of {{.R.Processes}} test processes.{{if .R.Unmatched}} {{.R.Unmatched}} recorded scripts are not the spec's (test scripts, other versions).{{end}}</p>
<table class="sum"><tr><th>instance</th><th>script</th><th>lines</th><th>branches</th></tr>
{{range .R.Instances}}{{$in := .}}{{range .Scripts}}<tr><td>{{$in.Name}}</td><td><a href="#s-{{$in.Name}}-{{.Name}}">{{.Name}}</a>{{if not .Recorded}} (no test ran it){{end}}</td><td>{{.LinesRun}}/{{.Lines}} {{pct .LinePercent}}</td><td>{{.BranchesRun}}/{{.Branches}} {{pct .BranchPercent}}</td></tr>
{{end}}<tr class="total"><td>{{.Name}}</td><td>all scripts{{if .Floor}} (floor: lines {{.Floor.Lines}}%, branches {{.Floor.Branches}}%){{end}}</td><td>{{.LinesRun}}/{{.Lines}} {{pct .LinePercent}}</td><td>{{.BranchesRun}}/{{.Branches}} {{pct .BranchPercent}}</td></tr>
{{end}}</table>
{{range .Scripts}}
<h2 id="{{.Anchor}}">{{.Instance}}/{{.Name}}</h2>
<p>{{.File}}: lines {{.LinesRun}}/{{.Lines}} ({{pct .LinePercent}}), branches {{.BranchesRun}}/{{.Branches}} ({{pct .BranchPercent}})</p>
<table class="lua">
{{range .Rows}}<tr class="{{.Class}}"><td class="n">{{.N}}</td><td class="h">{{.Hits}}</td><td class="code">{{.Code}}{{range .Arms}}<span class="arm {{if .Taken}}taken{{else}}not{{end}}">{{.Text}}</span>{{end}}</td></tr>
{{end}}</table>
{{end}}
</body>
</html>
`))
