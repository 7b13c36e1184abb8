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
	var errs []Problem
	add := func(e *keyspec.Error) { errs = append(errs, Problem{Err: e, Rule: RuleSignature}) }
	entry := fmt.Sprintf("script %q", s.ID)
	at := func(line int) keyspec.Pos { return keyspec.Pos{File: display, Line: line} }

	dynKeys, readKeys := false, map[*keyspec.ScriptKey]bool{}
	for _, r := range info.Keys {
		if r.Index == 0 {
			dynKeys = true
			continue
		}
		pos := s.KeyAt(r.Index)
		switch {
		case pos == nil:
			add(&keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("reads KEYS[%d], but %s declares %s (%s:%d)", r.Index, entry, fmt.Sprintf("%d KEYS", s.MaxKeys()), s.Pos.File, s.Line)})
		case pos.Unused != "":
			add(&keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("reads KEYS[%d] %q, which %s declares unused (%s): the script must not read it, or drop unused (%s:%d)", r.Index, pos.Name, entry, pos.Unused, pos.File, pos.Line)})
		}
		readKeys[pos] = true
	}
	dynArgs, readArgs := false, map[*keyspec.Arg]bool{}
	for _, r := range info.Argv {
		if r.Index == 0 {
			dynArgs = true
			continue
		}
		a := s.ArgAt(r.Index)
		switch {
		case a == nil:
			add(&keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("reads ARGV[%d], but %s declares %s (%s:%d)", r.Index, entry, fmt.Sprintf("%d ARGV", s.MaxArgs()), s.Pos.File, s.Line)})
		case a.Unused != "":
			add(&keyspec.Error{Pos: at(r.Line), Msg: fmt.Sprintf("reads ARGV[%d] %q, which %s declares unused (%s): the script must not read it, or drop unused (%s:%d)", r.Index, a.Name, entry, a.Unused, a.File, a.Line)})
		}
		readArgs[a] = true
	}
	if !dynKeys {
		for i, k := range s.Keys {
			if !readKeys[k] && k.Unused == "" {
				add(&keyspec.Error{Pos: k.Pos, Entry: fmt.Sprintf("%s KEYS[%d] %q", entry, i+1, k.Name), Msg: display + " never reads it (a position callers pass that the script ignores is declared unused: {reason: ...})"})
			}
		}
	}
	if !dynArgs {
		for i, a := range s.Argv {
			if !readArgs[a] && a.Unused == "" {
				add(&keyspec.Error{Pos: a.Pos, Entry: fmt.Sprintf("%s ARGV[%d] %q", entry, i+1, a.Name), Msg: display + " never reads it (an argument callers pass that the script ignores is declared unused: {reason: ...})"})
			}
		}
	}
	return errs
}
