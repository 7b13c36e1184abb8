package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Batch queues script calls to send in one pipeline. Unlike go-redis's Script.Run
// inside a pipeline (go-redis#3228), a NOSCRIPT reply never reaches the caller:
// Exec loads the missing scripts and replays the calls that failed with it.
//
// A Batch is not a transaction: calls run in order but other clients' commands may
// run between them, and replayed calls run after the rest of the batch.
// A Batch is for one goroutine and one Exec.
type Batch struct {
	calls []*call
	done  bool
}

type call struct {
	script *Script
	in     Input
	cmd    *redis.Cmd
	err    error // a refused input: the call is not sent
}

// Pending is the future result of a queued call, decoded after Exec.
type Pending[T any] struct {
	b      *Batch
	c      *call
	decode func(any) (T, error)
}

// Queue adds a call to the batch. A refused Input (a key or an argument the
// wrapper refused) is kept as the call's result and nothing is sent for it.
func Queue[T any](b *Batch, in Input, decode func(any) (T, error)) *Pending[T] {
	c := &call{script: in.script, in: in, err: in.err}
	b.calls = append(b.calls, c)
	return &Pending[T]{b: b, c: c, decode: decode}
}

// Exec sends every queued call in one pipeline on c, loads any script the server
// answered NOSCRIPT for and replays those calls in a second pipeline. It returns an
// error only when a pipeline could not be sent or answered (network, context);
// each call's own outcome, error replies included, is in its Pending.
func (b *Batch) Exec(ctx context.Context, c redis.UniversalClient) error {
	if b.done {
		return errors.New("runtime: batch executed twice")
	}
	b.done = true
	if err := b.send(ctx, c, b.calls); err != nil {
		return err
	}
	var retry []*call
	loaded := map[*Script]bool{}
	for _, cl := range b.calls {
		if cl.cmd == nil || !isNoScript(cl.cmd.Err()) {
			continue
		}
		if !loaded[cl.script] {
			if err := cl.script.load(ctx, c); err != nil {
				return err
			}
			loaded[cl.script] = true
		}
		retry = append(retry, cl)
	}
	if len(retry) == 0 {
		return nil
	}
	return b.send(ctx, c, retry)
}

func (b *Batch) send(ctx context.Context, c redis.UniversalClient, calls []*call) error {
	pipe := c.Pipeline()
	n := 0
	for _, cl := range calls {
		if cl.err != nil {
			continue
		}
		cl.cmd = redis.NewCmd(ctx, cl.in.command()...)
		_ = pipe.Process(ctx, cl.script.cmder(cl.cmd))
		n++
	}
	if n == 0 {
		return nil
	}
	_, err := pipe.Exec(ctx)
	if err == nil || err == redis.Nil {
		return nil
	}
	var re redis.Error
	if errors.As(err, &re) {
		return nil // a call's own error reply: it stays in its Pending
	}
	return fmt.Errorf("batch of %d script calls: %w", n, err)
}

// Result is the call's decoded reply or its error.
func (p *Pending[T]) Result() (T, error) {
	var zero T
	switch {
	case p.c.err != nil:
		return zero, p.c.err
	case p.c.cmd == nil:
		return zero, fmt.Errorf("script %s: %w", p.c.script.name, ErrNotExecuted)
	}
	v, err := p.c.cmd.Result()
	if err == redis.Nil {
		v, err = nil, nil
	}
	if err = p.c.script.outcome(err); errors.Is(err, ErrOutcomeUnknown) {
		return zero, err
	}
	if err != nil {
		return zero, replyError(p.c.script.name, err)
	}
	return p.decode(v)
}
