package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestSetHeaders(t *testing.T) {
	cases := []struct {
		d    Decision
		want map[string]string
	}{
		{Decision{Allowed: true, Limit: 30, Window: time.Minute, Remaining: 29, ResetAfter: 59*time.Second + time.Millisecond},
			map[string]string{"RateLimit-Limit": "30", "RateLimit-Remaining": "29", "RateLimit-Reset": "60", "RateLimit-Policy": "30;w=60", "Retry-After": ""}},
		// Retry-After rounds up: 1 ms to wait is 1 s, 1000 ms is 1 s, 1001 ms is 2 s.
		{Decision{Limit: 3, Window: time.Second, RetryAfter: time.Millisecond, ResetAfter: time.Millisecond},
			map[string]string{"Retry-After": "1", "RateLimit-Reset": "1", "RateLimit-Remaining": "0"}},
		{Decision{Limit: 3, Window: time.Second, RetryAfter: time.Second, ResetAfter: time.Second},
			map[string]string{"Retry-After": "1", "RateLimit-Reset": "1"}},
		{Decision{Limit: 3, Window: time.Second, RetryAfter: time.Second + time.Millisecond, ResetAfter: 2 * time.Second},
			map[string]string{"Retry-After": "2", "RateLimit-Reset": "2"}},
		{Decision{Limit: 3, Window: time.Second, RetryAfter: 9801 * time.Millisecond},
			map[string]string{"Retry-After": "10"}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h := http.Header{"Retry-After": {"stale"}}
			c.d.SetHeaders(h)
			for k, v := range c.want {
				if got := h.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestStatusCode(t *testing.T) {
	cases := []struct {
		d    Decision
		err  error
		want int
	}{
		{Decision{Allowed: true}, nil, 200},
		{Decision{}, nil, 429},
		{Decision{}, fmt.Errorf("x: %w: %w", ErrUnavailable, errors.New("dial tcp: refused")), 503},
		{Decision{}, fmt.Errorf("x: %w", ErrInvalidSubject), 400},
		{Decision{}, fmt.Errorf("x: %w", ErrInvalidCost), 400},
		{Decision{}, fmt.Errorf("x: %w", ErrUnknownRoute), 500},
		{Decision{}, fmt.Errorf("x: %w", ErrMissingSubject), 500},
	}
	for _, c := range cases {
		if got := StatusCode(c.d, c.err); got != c.want {
			t.Errorf("StatusCode(%+v, %v) = %d, want %d", c.d, c.err, got, c.want)
		}
	}
}
