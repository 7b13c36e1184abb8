package keyspec

import "strings"

// Match reports whether name is one of the names the pattern produces: its
// literal text where the pattern has literal text, and where it has a
// placeholder a value that placeholder accepts (for a hash tag, between the
// tag's braces). The test harness checks the keys a script touched with it.
func (p Pattern) Match(name string) bool {
	if p.Segments == nil {
		return false
	}
	return matchItems(p.Items(), name)
}

func matchItems(items []Item, s string) bool {
	if len(items) == 0 {
		return s == ""
	}
	it := items[0]
	if it.Param == nil {
		return strings.HasPrefix(s, it.Text) && matchItems(items[1:], s[len(it.Text):])
	}
	// A placeholder's value: try every split (values never hold ':', but a
	// placeholder may be followed by other text than ':').
	for i := 1; i <= len(s); i++ {
		if it.Param.Accepts(s[:i]) && matchItems(items[1:], s[i:]) {
			return true
		}
	}
	return false
}
