package compiler

import (
	"errors"
	"strings"

	"github.com/hanchat/luagen/gen/keyspec"
	"github.com/hanchat/luagen/gen/luascript"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// RuleFunctionBody: a script Redis runs under EVAL that Lua refuses as the body
// of a function (functions mode), such as one reading a top-level '...'.
const RuleFunctionBody = "function-body"

// functionBodyProblem checks a script of a functions-mode instance as what it
// becomes in the library: the body of function(KEYS, ARGV), which is no vararg
// function. A top-level '...' (the chunk's own arguments under EVAL, always
// empty there) compiles as a script but not as such a body, and FUNCTION LOAD
// then refuses the whole library, every function of the instance with it. The
// body is wrapped on its first line, so Lua's line is the file's.
func functionBodyProblem(display string, src []byte) *Problem {
	wrapped := "return function(KEYS, ARGV) " + string(luascript.Body(src)) + "\nend"
	chunk, err := parse.Parse(strings.NewReader(wrapped), display)
	if err == nil {
		_, err = lua.Compile(chunk, display)
	}
	if err == nil {
		return nil
	}
	line, msg := 1, err.Error()
	var ce *lua.CompileError
	if errors.As(err, &ce) {
		line, msg = ce.Line, ce.Message
	}
	if strings.Contains(msg, "'...'") {
		msg = "a top-level '...' (the script's arguments under EVAL, always empty) is refused inside a function: in functions mode the script is the body of function(KEYS, ARGV), and FUNCTION LOAD would refuse the whole library; use KEYS and ARGV"
	} else {
		msg = "in functions mode the script is the body of function(KEYS, ARGV), where Lua refuses it (FUNCTION LOAD would refuse the whole library): " + msg
	}
	return &Problem{Rule: RuleFunctionBody, Err: &keyspec.Error{Pos: keyspec.Pos{File: display, Line: line}, Msg: msg}}
}
