package diff

import (
	"fmt"
	"strings"
)

// Markdown renders the report for a pull request comment: a table of the
// scripts that changed, a section per script, and the aclfile lines that
// change as a diff block per instance.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## luagen diff against `%s`\n\n", r.Against)
	if r.Empty() {
		b.WriteString("No script, key access or ACL grant changes.\n")
		return b.String()
	}
	if len(r.Scripts) > 0 {
		b.WriteString("### Scripts\n\n| script | status | commands | keys | Lua |\n|---|---|---|---|---|\n")
		for _, s := range r.Scripts {
			fmt.Fprintf(&b, "| `%s/%s` | %s | %s | %s | %s |\n", s.Instance, s.Name, s.Status,
				counts(len(s.CommandsAdded), len(s.CommandsRemoved)), counts(len(s.KeysAdded), len(s.KeysRemoved)), lua(s))
		}
		b.WriteString("\n")
		for _, s := range r.Scripts {
			fmt.Fprintf(&b, "#### `%s/%s` (%s)\n\n", s.Instance, s.Name, s.Status)
			list(&b, "calls now", codes(s.CommandsAdded))
			list(&b, "no longer calls", codes(s.CommandsRemoved))
			for _, mode := range []string{"read", "write"} {
				list(&b, "may now "+mode, keys(s.KeysAdded, mode))
				list(&b, "no longer may "+mode, keys(s.KeysRemoved, mode))
			}
			if s.Status == Changed && s.LuaChanged() {
				fmt.Fprintf(&b, "- Lua changed: SHA1 `%.12s` -> `%.12s`\n", s.OldSHA1, s.NewSHA1)
			}
			b.WriteString("\n")
		}
	}
	if len(r.ACL) > 0 {
		b.WriteString("### ACL\n\n")
		last := ""
		for _, c := range r.ACL {
			if w := where(c.Instance, c.Server); w != last {
				if last != "" {
					b.WriteString("```\n\n")
				}
				fmt.Fprintf(&b, "#### %s\n\n```diff\n", w)
				last = w
			}
			if c.Old != "" {
				fmt.Fprintf(&b, "-%s\n", c.Old)
			}
			if c.New != "" {
				fmt.Fprintf(&b, "+%s\n", c.New)
			}
		}
		b.WriteString("```\n\n")
		b.WriteString("| user | granted | revoked |\n|---|---|---|\n")
		for _, c := range r.ACL {
			fmt.Fprintf(&b, "| `%s` (%s) | %s | %s |\n", c.User, where(c.Instance, c.Server), orDash(codes(c.Granted)), orDash(codes(c.Revoked)))
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "> %s\n", n)
	}
	return b.String()
}

func counts(added, removed int) string {
	if added == 0 && removed == 0 {
		return ""
	}
	return fmt.Sprintf("+%d −%d", added, removed)
}

func lua(s ScriptChange) string {
	switch {
	case s.Status != Changed:
		return ""
	case s.LuaChanged():
		return "changed"
	}
	return "same"
}

func list(b *strings.Builder, label string, items []string) {
	if len(items) > 0 {
		fmt.Fprintf(b, "- %s: %s\n", label, strings.Join(items, ", "))
	}
}

func codes(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + strings.ReplaceAll(s, "|", "\\|") + "`"
	}
	return out
}

func keys(ks []KeyChange, mode string) []string {
	var out []string
	for _, k := range ks {
		if k.Mode == mode {
			out = append(out, keyText(k))
		}
	}
	return out
}

func orDash(items []string) string {
	if len(items) == 0 {
		return "—"
	}
	return strings.Join(items, " ")
}
