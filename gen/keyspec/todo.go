package keyspec

import (
	"strings"
)

// TodoMarker marks, in a spec luagen import drafted, a decision only a person
// can make (a pattern, a TTL, a placeholder's type, a reason). Parse refuses a
// spec holding one and lists each that is still open, at its line.
const TodoMarker = "TODO(luagen import)"

// todos are the open decisions of a drafted spec, one error a line, each
// naming the entry it is in ("keys.job.ttl").
func todos(file string, src []byte) List {
	lines := strings.Split(string(src), "\n")
	var out List
	for i, line := range lines {
		j := strings.Index(line, TodoMarker)
		if j < 0 || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		what := strings.TrimSpace(strings.TrimPrefix(line[j+len(TodoMarker):], ":"))
		if k := strings.IndexByte(what, '"'); k >= 0 {
			what = what[:k]
		}
		what = strings.TrimSpace(what)
		out = append(out, &Error{Pos: Pos{File: file, Line: i + 1}, Entry: yamlPath(lines, i, j), Msg: "still open (luagen import drafted it): " + what})
	}
	return out
}

// yamlPath is the path of the entry at column col of line i, from the keys of
// the lines above it with less indentation: "keys.job.ttl".
func yamlPath(lines []string, i, col int) string {
	key := func(s string) string {
		t := strings.TrimLeft(strings.TrimSpace(s), "- {")
		k, _, ok := strings.Cut(t, ":")
		if !ok || strings.ContainsAny(k, " \"'") {
			return ""
		}
		return k
	}
	// The innermost key on the line itself, before the marker.
	inner := ""
	if before := lines[i][:col]; strings.Contains(before, ":") {
		fields := strings.FieldsFunc(before, func(r rune) bool { return r == '{' || r == ',' || r == '[' })
		for f := len(fields) - 1; f >= 0; f-- {
			if k := key(fields[f]); k != "" {
				inner = k
				break
			}
		}
	}
	path := []string{}
	if inner != "" {
		path = append(path, inner)
	}
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
	if k := key(lines[i]); k != "" && k != inner {
		path = append(path, k)
	}
	for l := i - 1; l >= 0 && indent > 0; l-- {
		t := strings.TrimLeft(lines[l], " ")
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		ind := len(lines[l]) - len(t)
		if ind < indent {
			if k := key(lines[l]); k != "" {
				path = append(path, k)
			}
			indent = ind
		}
	}
	for a, b := 0, len(path)-1; a < b; a, b = a+1, b-1 {
		path[a], path[b] = path[b], path[a]
	}
	return strings.Join(path, ".")
}

// FieldOK reports whether s may be literal text of a pattern segment
// ([A-Za-z0-9._-]+), also as a hash field name the importer records.
func FieldOK(s string) bool { return literalOK(s) }
