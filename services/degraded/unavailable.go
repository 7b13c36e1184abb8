package degraded

import (
	"context"
	"errors"
	"strings"

	"github.com/hanchat/luagen/runtime"
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
// which is the caller giving up. A Policy (fail closed, fail open, a local
// limiter) applies only when Unavailable is true: a refusal is a bug or a
// misconfiguration, and must not silently change who is allowed what.
func Unavailable(err error) bool {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, runtime.ErrInvalidArg), errors.Is(err, runtime.ErrInvalidKeyPart), errors.Is(err, runtime.ErrReplyShape),
		errors.Is(err, runtime.ErrNoClient), errors.Is(err, runtime.ErrWrongDB), errors.Is(err, runtime.ErrSHAMismatch), errors.Is(err, runtime.ErrNotExecuted):
		return false
	}
	var se *runtime.ScriptError
	if errors.As(err, &se) {
		return busyCodes[se.Code]
	}
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.ErrClosed) {
		code, _, _ := strings.Cut(re.Error(), " ")
		return busyCodes[code]
	}
	return true // network, timeout, deadline, a closed client or pool
}
