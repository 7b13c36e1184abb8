package compiler

import (
	"fmt"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
)

// checkPositions checks the KEYS and ARGV the script reads against the
// positions its signature declares: no read beyond them (a trailing repeating
// position reaches as far as its max), every position read (unless the
// reading meets an index that is not a literal, KEYS[i] in a loop, which may
// reach any), and no read of a position declared unused.
func checkPositions(s *keyspec.Script, info *luascript.Info, display string) []Problem {
	keys := positionTable[*keyspec.ScriptKey]{
		name: "KEYS", refs: info.Keys, list: s.Keys, at: s.KeyAt, declared: fmt.Sprintf("%d KEYS", s.MaxKeys()), what: "a position",
		of: func(k *keyspec.ScriptKey) position { return position{k.Pos, k.Name, k.Unused} },
	}
	argv := positionTable[*keyspec.Arg]{
		name: "ARGV", refs: info.Argv, list: s.Argv, at: s.ArgAt, declared: fmt.Sprintf("%d ARGV", s.MaxArgs()), what: "an argument",
		of: func(a *keyspec.Arg) position { return position{a.Pos, a.Name, a.Unused} },
	}
	keyReads, keysUnread := keys.check(s, display)
	argReads, argsUnread := argv.check(s, display)
	var errs []Problem
	for _, part := range [][]*keyspec.Error{keyReads, argReads, keysUnread, argsUnread} {
		for _, e := range part {
			errs = append(errs, Problem{Err: e, Rule: RuleSignature})
		}
	}
	return errs
}

// positionTable is one of the tables a script reads its call from: KEYS with
// P *keyspec.ScriptKey, ARGV with P *keyspec.Arg.
type positionTable[P comparable] struct {
	name     string           // KEYS or ARGV
	refs     []luascript.Ref  // the reads of it
	list     []P              // the positions the script declares
	at       func(n int) P    // the position of index n, or nil
	declared string           // how many the script declares, for the error
	what     string           // what a position is, for the error
	of       func(P) position // what the errors say of a position
}

// position is what the errors say of a declared position.
type position struct {
	keyspec.Pos
	name, unused string
}

// check returns the errors of reads beyond the declared positions or of one
// declared unused (reads), and those of declared positions the script never
// reads (unread; none when it reads the table by an index that is not a
// literal).
func (t positionTable[P]) check(s *keyspec.Script, display string) (reads, unread []*keyspec.Error) {
	entry := fmt.Sprintf("script %q", s.ID)
	var none P
	dynamic, read := false, map[P]bool{}
	for _, r := range t.refs {
		if r.Index == 0 {
			dynamic = true
			continue
		}
		p := t.at(r.Index)
		at := keyspec.Pos{File: display, Line: r.Line}
		switch {
		case p == none:
			reads = append(reads, &keyspec.Error{Pos: at, Msg: fmt.Sprintf("reads %s[%d], but %s declares %s (%s:%d)", t.name, r.Index, entry, t.declared, s.Pos.File, s.Line)})
		case t.of(p).unused != "":
			o := t.of(p)
			reads = append(reads, &keyspec.Error{Pos: at, Msg: fmt.Sprintf("reads %s[%d] %q, which %s declares unused (%s): the script must not read it, or drop unused (%s:%d)", t.name, r.Index, o.name, entry, o.unused, o.File, o.Line)})
		}
		read[p] = true
	}
	if dynamic {
		return reads, nil
	}
	for i, p := range t.list {
		if o := t.of(p); !read[p] && o.unused == "" {
			unread = append(unread, &keyspec.Error{Pos: o.Pos, Entry: fmt.Sprintf("%s %s[%d] %q", entry, t.name, i+1, o.name), Msg: display + " never reads it (" + t.what + " callers pass that the script ignores is declared unused: {reason: ...})"})
		}
	}
	return reads, unread
}
