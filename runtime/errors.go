package runtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Sentinel errors callers match with errors.Is.
var (
	// ErrInvalidKeyPart: a key or channel part failed its placeholder's format.
	ErrInvalidKeyPart = errors.New("invalid key part")
	// ErrInvalidArg: a script argument failed its declared type or bounds.
	ErrInvalidArg = errors.New("invalid script argument")
	// ErrReplyShape: Redis answered with a reply the script's declaration does not allow.
	ErrReplyShape = errors.New("reply of the wrong shape")
	// ErrScriptReply: the script (or Redis, on its behalf) answered with an error reply.
	ErrScriptReply = errors.New("script error reply")
	// ErrWrongDB: a client is connected to another database than the script's keys live in.
	ErrWrongDB = errors.New("client selects the wrong database")
	// ErrSHAMismatch: a script's source does not hash to its declared SHA1.
	ErrSHAMismatch = errors.New("script SHA1 mismatch")
	// ErrOutcomeUnknown: a call was sent but no reply came back (the context
	// ended, the connection failed): the script may or may not have run.
	ErrOutcomeUnknown = errors.New("script outcome unknown")
	// ErrUncheckedDB: a client whose database cannot be checked (a bare
	// *redis.AutoPipeliner) was given where a database is required.
	ErrUncheckedDB = errors.New("the client's database cannot be checked")
	// ErrNotExecuted: a queued call's result was read before its batch ran.
	ErrNotExecuted = errors.New("batch not executed")
)

// ErrorCode is the first word of an error reply, such as NOT_OWNER or NOPERM.
// Generated packages declare one per code their scripts declare, so a caller
// writes errors.Is(err, app.ErrNotOwner).
type ErrorCode string

func (c ErrorCode) Error() string { return "error reply " + string(c) }

// ScriptError is an error reply to a script call. It carries the script's name and
// the reply; never the call's keys or arguments.
type ScriptError struct {
	Script  string
	Code    string // first word of the reply, e.g. NOT_OWNER, NOPERM, ERR
	Message string // the whole reply
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("script %s: %s", e.Script, e.Message)
}

// Is matches ErrScriptReply, the ErrorCode of the reply's first word, and
// ErrNoFunction for FCALL's "Function not found".
func (e *ScriptError) Is(target error) bool {
	if target == ErrScriptReply {
		return true
	}
	if target == ErrNoFunction {
		return isNoFunction(e.Message)
	}
	c, ok := target.(ErrorCode)
	return ok && string(c) == e.Code
}

// KeyPartError is a value a key builder refused. It names the key and the part,
// never the value (a refused value may be hostile or personal).
type KeyPartError struct {
	Key    string
	Part   string
	Reason string
}

func (e *KeyPartError) Error() string {
	return fmt.Sprintf("key %s: {%s}: %s", e.Key, e.Part, e.Reason)
}

// Is matches ErrInvalidKeyPart.
func (e *KeyPartError) Is(target error) bool { return target == ErrInvalidKeyPart }

// ArgError is a script argument a wrapper refused before calling Redis.
type ArgError struct {
	Script string
	Arg    string
	Reason string
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("script %s: argument %s: %s", e.Script, e.Arg, e.Reason)
}

// Is matches ErrInvalidArg.
func (e *ArgError) Is(target error) bool { return target == ErrInvalidArg }

// ReplyError is a reply that does not have the declared shape.
type ReplyError struct {
	Script string
	Field  string
	Reason string
}

func (e *ReplyError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("script %s: reply: %s", e.Script, e.Reason)
	}
	return fmt.Sprintf("script %s: reply field %s: %s", e.Script, e.Field, e.Reason)
}

// Is matches ErrReplyShape.
func (e *ReplyError) Is(target error) bool { return target == ErrReplyShape }

// isNoScript reports whether err is Redis's NOSCRIPT reply.
func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// replyError turns a Redis error reply into a *ScriptError, and anything else
// (network, context) into an error wrapping the script name.
func replyError(script string, err error) error {
	var re redis.Error
	if errors.As(err, &re) && err != redis.Nil {
		msg := re.Error()
		code, _, _ := strings.Cut(msg, " ")
		return &ScriptError{Script: script, Code: code, Message: msg}
	}
	return fmt.Errorf("script %s: %w", script, err)
}
