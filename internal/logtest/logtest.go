// Package logtest records what a component logs through log/slog, so a test can
// check what was said, when, and that no secret was.
package logtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Record is one log record: its time, level, message and attributes, the
// attributes also as text (groups joined with '.').
type Record struct {
	Time    time.Time
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

// Line is the record as one line of text: the message and key=value pairs.
func (r Record) Line() string {
	var b strings.Builder
	b.WriteString(r.Message)
	for k, v := range r.Attrs {
		b.WriteString(" " + k + "=" + v)
	}
	return b.String()
}

// Recorder is a slog.Handler that keeps every record at every level. It is safe
// for concurrent use.
type Recorder struct {
	store  *store
	attrs  []slog.Attr
	prefix string // open groups, each followed by '.'
}

type store struct {
	mu   sync.Mutex
	recs []Record
}

// New returns a Logger that writes to a new Recorder, and the Recorder.
func New() (*slog.Logger, *Recorder) {
	r := &Recorder{store: &store{}}
	return slog.New(r), r
}

// Enabled is true at every level.
func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps rec.
func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	out := Record{Time: rec.Time, Level: rec.Level, Message: rec.Message, Attrs: map[string]string{}}
	for _, a := range r.attrs {
		addAttr(out.Attrs, "", a)
	}
	rec.Attrs(func(a slog.Attr) bool {
		addAttr(out.Attrs, r.prefix, a)
		return true
	})
	r.store.mu.Lock()
	r.store.recs = append(r.store.recs, out)
	r.store.mu.Unlock()
	return nil
}

func addAttr(m map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			addAttr(m, p, g)
		}
		return
	}
	m[prefix+a.Key] = v.String()
}

// WithAttrs returns a handler that adds attrs to every record, into the same
// Recorder.
func (r *Recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(append([]slog.Attr(nil), r.attrs...), prefixed(r.prefix, attrs)...)
	return &c
}

func prefixed(prefix string, attrs []slog.Attr) []slog.Attr {
	if prefix == "" {
		return attrs
	}
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

// WithGroup returns a handler that puts later attributes under name.
func (r *Recorder) WithGroup(name string) slog.Handler {
	if name == "" {
		return r
	}
	c := *r
	c.prefix = r.prefix + name + "."
	return &c
}

// Records returns the records whose message is msg, in the order they were
// logged; every record when msg is "".
func (r *Recorder) Records(msg string) []Record {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	var out []Record
	for _, rec := range r.store.recs {
		if msg == "" || rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}
