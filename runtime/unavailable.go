package runtime

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// busyCodes are error replies that mean the server cannot serve any call right
// now, rather than refusing this one. NOSCRIPT reaches a caller only when the
// server lost the script again between Script.Run's SCRIPT LOAD and its retry
// (a restart, a SCRIPT FLUSH): the server it loaded into is gone.
var busyCodes = map[string]bool{
	"LOADING": true, "BUSY": true, "MASTERDOWN": true, "CLUSTERDOWN": true, "TRYAGAIN": true, "OOM": true, "READONLY": true,
	"NOSCRIPT": true,
}

// Unavailable reports whether err means Redis could not serve the call: it is
// unreachable, timed out (the caller's deadline included), closed, loading, busy
// or out of memory. It is false for a refusal of this call (an error reply such
// as WRONGTYPE, NOPERM or a script's own code; a reply of the wrong shape; a
// refused key part or argument; a missing client), and for context.Canceled,
// which is the caller giving up. Degraded-mode policies (fail closed, fail open,
// a local limiter) apply only when Unavailable is true: a refusal is a bug or a
// misconfiguration, and must not silently change who is allowed what.
func Unavailable(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, ErrInvalidArg), errors.Is(err, ErrInvalidKeyPart), errors.Is(err, ErrReplyShape),
		errors.Is(err, ErrNoClient), errors.Is(err, ErrWrongDB), errors.Is(err, ErrSHAMismatch), errors.Is(err, ErrNotExecuted):
		return false
	}
	var se *ScriptError
	if errors.As(err, &se) {
		return busyCodes[se.Code]
	}
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.ErrClosed) {
		code, _, _ := cut(re.Error())
		return busyCodes[code]
	}
	return true // network, timeout, deadline, a closed client or pool
}

func cut(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
