package luatest

import (
	"sync"
	"time"
)

// Clock is a fake clock behind the TIME command and key expiry. It only moves
// when a test moves it, so TTL behaviour is exact and tests need no sleeps.
// A Clock is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock that reads start until it is advanced or set.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now is the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// unixMilli is the clock in Unix milliseconds, the unit Redis keeps deadlines in.
func (c *Clock) unixMilli() int64 {
	return c.Now().UnixMilli()
}
