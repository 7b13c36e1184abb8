package luatest

import (
	"fmt"
	"strings"
)

// A reader for the part of Tcl that Redis's test suite uses to call scripts:
// commands made of words, a word being {braced} (literal), "quoted" (with
// backslash escapes), [bracketed] (a command substitution) or bare. It reads
// tests/unit/scripting.tcl into commands the corpus extraction walks; it does
// not evaluate Tcl.

// tclWord is one word of a command.
type tclWord struct {
	kind byte   // '{', '"', '[' or 0 for a bare word
	text string // the word without its delimiters
}

// tclCommand is one command: its words and the line it starts on.
type tclCommand struct {
	line  int
	words []tclWord
}

// literal is the word's value when Tcl would not substitute anything in it.
func (w tclWord) literal() (string, bool) {
	switch w.kind {
	case '{':
		return w.text, true
	case '[':
		return "", false
	case '"':
		if strings.ContainsAny(w.text, "$[") {
			return "", false
		}
		return tclUnescape(w.text), true
	}
	if strings.ContainsAny(w.text, "$[") {
		return "", false
	}
	return tclUnescape(w.text), true
}

func tclUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\n':
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// parseTcl splits a script into commands; line is the line its text starts on.
func parseTcl(src string, line int) ([]tclCommand, error) {
	p := &tclParser{src: src, line: line}
	var out []tclCommand
	for {
		cmd, ok, err := p.command()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if len(cmd.words) > 0 {
			out = append(out, cmd)
		}
	}
}

type tclParser struct {
	src  string
	pos  int
	line int
}

func (p *tclParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *tclParser) advance() byte {
	c := p.src[p.pos]
	p.pos++
	if c == '\n' {
		p.line++
	}
	return c
}

// command reads the next command; ok is false at the end of the text.
func (p *tclParser) command() (tclCommand, bool, error) {
	// Skip blank lines, separators and comments.
	for p.pos < len(p.src) {
		c := p.peek()
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';':
			p.advance()
		case c == '#':
			for p.pos < len(p.src) && p.peek() != '\n' {
				p.advance()
			}
		case c == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n':
			p.advance()
			p.advance()
		default:
			goto words
		}
	}
	return tclCommand{}, false, nil
words:
	cmd := tclCommand{line: p.line}
	for p.pos < len(p.src) {
		c := p.peek()
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			p.advance()
			continue
		case c == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n':
			p.advance()
			p.advance()
			continue
		case c == '\n' || c == ';':
			p.advance()
			return cmd, true, nil
		}
		w, err := p.word()
		if err != nil {
			return cmd, false, err
		}
		cmd.words = append(cmd.words, w)
	}
	return cmd, true, nil
}

func (p *tclParser) word() (tclWord, error) {
	start := p.line
	switch p.peek() {
	case '{':
		p.advance()
		begin, depth := p.pos, 1
		for p.pos < len(p.src) {
			c := p.advance()
			switch c {
			case '\\':
				if p.pos < len(p.src) {
					p.advance()
				}
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					return tclWord{kind: '{', text: p.src[begin : p.pos-1]}, nil
				}
			}
		}
		return tclWord{}, fmt.Errorf("line %d: unbalanced {", start)
	case '"':
		p.advance()
		begin := p.pos
		for p.pos < len(p.src) {
			c := p.advance()
			switch c {
			case '\\':
				if p.pos < len(p.src) {
					p.advance()
				}
			case '[':
				if err := p.skipBracket(); err != nil {
					return tclWord{}, err
				}
			case '"':
				return tclWord{kind: '"', text: p.src[begin : p.pos-1]}, nil
			}
		}
		return tclWord{}, fmt.Errorf("line %d: unbalanced \"", start)
	case '[':
		p.advance()
		begin := p.pos
		if err := p.skipBracket(); err != nil {
			return tclWord{}, err
		}
		text := p.src[begin : p.pos-1]
		if p.pos < len(p.src) && !strings.ContainsRune(" \t\r\n;", rune(p.peek())) {
			// [a]b: a word that only starts with a substitution.
			rest, err := p.bare()
			return tclWord{text: "[" + text + "]" + rest.text}, err
		}
		return tclWord{kind: '[', text: text}, nil
	}
	return p.bare()
}

// skipBracket moves past the ']' that closes a '[' already read.
func (p *tclParser) skipBracket() error {
	start := p.line
	depth := 1
	for p.pos < len(p.src) {
		c := p.advance()
		switch c {
		case '\\':
			if p.pos < len(p.src) {
				p.advance()
			}
		case '{':
			p.pos--
			if _, err := p.word(); err != nil {
				return err
			}
		case '"':
			p.pos--
			if _, err := p.word(); err != nil {
				return err
			}
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return nil
			}
		}
	}
	return fmt.Errorf("line %d: unbalanced [", start)
}

func (p *tclParser) bare() (tclWord, error) {
	begin := p.pos
	for p.pos < len(p.src) {
		c := p.peek()
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' {
			break
		}
		if c == '\\' {
			p.advance()
			if p.pos < len(p.src) {
				p.advance()
			}
			continue
		}
		if c == '[' {
			p.advance()
			if err := p.skipBracket(); err != nil {
				return tclWord{}, err
			}
			continue
		}
		p.advance()
	}
	return tclWord{text: p.src[begin:p.pos]}, nil
}
