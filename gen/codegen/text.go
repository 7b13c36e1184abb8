// The words of the generated docs: wrapping, durations in their largest unit,
// sources cited, spec fragments made sentences. The model builders use them; the
// emitters only print what they made.

package codegen

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hanchat/luagen/gen/keyspec"
)

// comment is a doc comment, line by line without the "// ".
type comment []string

// wrapped is a comment of paragraphs wrapped at about 90 columns, each
// paragraph starting a line; no paragraph with words gives no comment.
func wrapped(paragraphs ...string) comment {
	var lines comment
	for _, p := range paragraphs {
		var line string
		for _, w := range strings.Fields(p) {
			if line != "" && len(line)+1+len(w) > 88 {
				lines = append(lines, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// line is a comment of one line however long it is.
func line(s string) comment { return comment{s} }

// human prints a duration in its largest whole unit: 24h, 30s, 5m, 1500ms.
func human(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d != 0 && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return d.String()
}

// cite is " (source: S)" for an entry's source, or "" when it has none.
func cite(source string) string {
	if source = strings.Join(strings.Fields(source), " "); source != "" {
		return " (source: " + source + ")"
	}
	return ""
}

// citeAfter is "; source: S" inside a parenthesis, or "" when there is no source.
func citeAfter(source string) string {
	if source = strings.Join(strings.Fields(source), " "); source != "" {
		return "; source: " + source
	}
	return ""
}

// sentence makes a doc fragment from the spec a sentence: capitalised, with a period.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// lowerFirst lower-cases the first letter of a sentence that goes after a
// colon, unless the first word is an acronym (JSON, TTL).
func lowerFirst(s string) string {
	if len(s) < 2 || s[0] < 'A' || s[0] > 'Z' || s[1] < 'a' || s[1] > 'z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

// ttlText is a key's TTL rule in words, for its type's doc.
func ttlText(t keyspec.TTL) string {
	switch t.Rule {
	case keyspec.TTLFixed:
		return fmt.Sprintf("TTL %s", human(t.Value))
	case keyspec.TTLHeartbeat:
		return fmt.Sprintf("TTL %s, renewed by heartbeat", human(t.Value))
	case keyspec.TTLWindowJitter:
		return fmt.Sprintf("TTL window + jitter up to %s", human(t.MaxJitter))
	case keyspec.TTLClamped:
		return fmt.Sprintf("TTL from %s, at most %s", t.From, human(t.Max))
	case keyspec.TTLNone:
		return "no TTL: " + strings.TrimSuffix(strings.TrimSpace(t.Reason), ".")
	}
	return ""
}
