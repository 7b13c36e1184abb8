// Package degraded is what a service does while its Redis cannot answer.
//
// Unavailable tells an outage (Redis down, timed out, past the caller's
// deadline, loading, busy, out of memory) from a refusal of one call (an error
// reply, a reply of the wrong shape, a refused argument) and from the caller's
// own cancellation; only an outage may change a decision. Policy is what the
// service chose for such a time: fail closed, fail open, or a bounded local
// limiter. Limiter is that local limiter: fixed windows counted in this
// process only, in a table of bounded size.
//
// The services that rate-limit (services/vm1/ratelimit, services/vm2/callerlimit)
// share these, so one idea has one name and one implementation.
package degraded

// Policy is what a caller's limit does while Redis is unavailable.
type Policy string

// The policies. The zero value means FailClosed: a request is let through
// without Redis only when the service chose so.
const (
	// FailClosed refuses the request (the service answers 503 or its
	// equivalent).
	FailClosed Policy = "fail_closed"
	// FailOpen allows the request without counting it; the limits of the
	// layer in front (the edge) still apply.
	FailOpen Policy = "fail_open"
	// LocalLimit counts the request in this process only, with a Limiter,
	// and denies once the local limit or the Limiter's table is full.
	LocalLimit Policy = "local_limit"
)

// Valid reports whether p is a declared Policy; the empty string is FailClosed.
func (p Policy) Valid() bool {
	return p == "" || p == FailClosed || p == FailOpen || p == LocalLimit
}

// OrFailClosed is p, or FailClosed when p is empty.
func (p Policy) OrFailClosed() Policy {
	if p == "" {
		return FailClosed
	}
	return p
}
