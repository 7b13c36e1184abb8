package ratelimit

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// SetHeaders writes the decision's rate-limit headers (draft-ietf-httpapi-
// ratelimit-headers): RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset and
// RateLimit-Policy, and Retry-After when the request is denied.
//
// HTTP gives Retry-After and RateLimit-Reset in whole seconds, so the exact
// Decision.RetryAfter is rounded up, never down: a client that waits as told is
// never refused for being a few milliseconds early.
func (d Decision) SetHeaders(h http.Header) {
	h.Set("RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
	h.Set("RateLimit-Remaining", strconv.FormatInt(max(d.Remaining, 0), 10))
	h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.ResetAfter), 10))
	h.Set("RateLimit-Policy", strconv.FormatInt(d.Limit, 10)+";w="+strconv.FormatInt(int64(d.Window/time.Second), 10))
	if d.Allowed {
		h.Del("Retry-After")
		return
	}
	h.Set("Retry-After", strconv.FormatInt(max(ceilSeconds(d.RetryAfter), 1), 10))
}

// ceilSeconds is d in whole seconds, rounded up; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// StatusCode is the HTTP status for an Allow outcome: 200 for an allowed
// decision, 429 for a denied one, 503 for ErrUnavailable, 400 for a subject or
// cost the client sent wrong, and 500 for the rest (an unknown route or a route
// without policy is the service's bug).
func StatusCode(d Decision, err error) int {
	switch {
	case err == nil && d.Allowed:
		return http.StatusOK
	case err == nil:
		return http.StatusTooManyRequests
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrInvalidSubject), errors.Is(err, ErrInvalidCost):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
