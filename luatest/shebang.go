package luatest

import (
	"bytes"
	"strings"
)

// scriptFlags are the flags Redis 7.0 knows in a script's shebang
// (scripts_flags_def).
var scriptFlags = map[string]bool{
	"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true,
}

// readShebang reads a script's first line as Redis 7.0's
// evalExtractShebangFlags does. has reports a "#!" line; flags are its flags;
// errText is the text of the error Redis answers when it refuses the line
// ("Unexpected engine in script shebang: #!not-lua"), "" when it accepts it.
func readShebang(src []byte) (flags []string, has bool, errText string) {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return nil, false, ""
	}
	line, _, found := bytes.Cut(src, []byte("\n"))
	if !found {
		return nil, true, "Invalid script shebang"
	}
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i] // a C string
	}
	parts, ok := splitArgs(string(line))
	if !ok || len(parts) == 0 {
		return nil, true, "Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return nil, true, "Unexpected engine in script shebang: " + parts[0]
	}
	for _, part := range parts[1:] {
		list, ok := strings.CutPrefix(part, "flags=")
		if !ok {
			return nil, true, "Unknown lua shebang option: " + part
		}
		if list == "" {
			continue
		}
		for _, f := range strings.Split(list, ",") {
			if !scriptFlags[f] {
				return nil, true, "Unexpected flag in script shebang: " + f
			}
			flags = append(flags, f)
		}
	}
	return flags, true, ""
}

// canonicalShebang rewrites an accepted shebang line as "#!lua flags=a,b",
// keeping every other line (and so every line number) as it is.
func canonicalShebang(src []byte, flags []string) []byte {
	_, rest, _ := bytes.Cut(src, []byte("\n"))
	line := "#!lua"
	if len(flags) > 0 {
		line += " flags=" + strings.Join(flags, ",")
	}
	out := make([]byte, 0, len(line)+1+len(rest))
	out = append(out, line...)
	out = append(out, '\n')
	return append(out, rest...)
}

// splitArgs is Redis's sdssplitargs: words separated by spaces, "double
// quotes" with C escapes and \xHH, 'single quotes' with \'. ok is false for
// unbalanced quotes or a closing quote followed by something other than a
// space.
func splitArgs(line string) (args []string, ok bool) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' }
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	hexVal := func(c byte) byte {
		switch {
		case c >= '0' && c <= '9':
			return c - '0'
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10
		}
		return c - 'A' + 10
	}
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			return args, true
		}
		var cur []byte
		var quote byte // '"' or '\'' inside quotes
		for done := false; !done; {
			c := at(p)
			switch {
			case quote != 0:
				switch {
				case quote == '"' && c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					cur = append(cur, hexVal(at(p+2))*16+hexVal(at(p+3)))
					p += 3
				case quote == '"' && c == '\\' && at(p+1) != 0:
					p++
					switch e := at(p); e {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, e)
					}
				case quote == '\'' && c == '\\' && at(p+1) == '\'':
					p++
					cur = append(cur, '\'')
				case c == quote:
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"', '\'':
					quote = c
				default:
					cur = append(cur, c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		args = append(args, string(cur))
	}
}
