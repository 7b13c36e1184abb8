package runtime

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// AutoPipelined is a go-redis AutoPipeliner together with the client it
// belongs to, so that a generated NewScripts can check the database behind it
// (a bare *redis.AutoPipeliner hides its client, and NewScripts refuses it).
// Make one with AutoPipeline and put it where a generated Clients takes a
// client.
//
// Generated wrappers on it: send nothing when the context has already ended;
// return when the context ends even while the server is busy (the
// auto-pipeliner itself waits for its batch), with an error that matches
// ErrOutcomeUnknown and the context's error, since the queued call may still
// run; and recover NOSCRIPT by loading the script through the underlying
// client and sending the call again.
type AutoPipelined struct {
	*redis.AutoPipeliner
	client redis.UniversalClient
}

// autoPipeliner is a client that makes auto-pipeliners: *redis.Client and
// *redis.ClusterClient.
type autoPipeliner interface {
	redis.UniversalClient
	AutoPipelineWithOptions(*redis.AutoPipelineOptions) (*redis.AutoPipeliner, error)
}

// AutoPipeline returns c's auto-pipeliner (go-redis keeps one per client, made
// with the options of the first call; nil opts means the client's own
// AutoPipelineOptions or go-redis's default) with c beside it. c must be a
// *redis.Client or a *redis.ClusterClient.
func AutoPipeline(c redis.UniversalClient, opts *redis.AutoPipelineOptions) (*AutoPipelined, error) {
	mk, ok := c.(autoPipeliner)
	if !ok {
		return nil, fmt.Errorf("runtime: AutoPipeline takes a *redis.Client or *redis.ClusterClient, not %T", c)
	}
	ap, err := mk.AutoPipelineWithOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("runtime: AutoPipeline: %w", err)
	}
	return &AutoPipelined{AutoPipeliner: ap, client: c}, nil
}

// ScriptLoad loads a script through the underlying client (on every node of a
// cluster), outside the auto-pipeline.
func (a *AutoPipelined) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return a.client.ScriptLoad(ctx, script)
}

// OutcomeUnknownError is a call that may or may not have run on the server: it
// was sent (or queued to be sent) and no reply came back, because the context
// ended or the connection failed. Matches ErrOutcomeUnknown, and unwraps to the
// cause (context.DeadlineExceeded, a network error).
type OutcomeUnknownError struct {
	Script string
	Err    error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("script %s: outcome unknown (the call may have run): %v", e.Script, e.Err)
}

// Is matches ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Unwrap is the cause.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// process sends cmd on the auto-pipeliner and waits for its reply or for the
// end of ctx, whichever comes first.
func (a *AutoPipelined) process(ctx context.Context, s *Script, cmd redis.Cmder) error {
	if ctx.Done() == nil {
		return a.AutoPipeliner.Process(ctx, cmd)
	}
	done := make(chan error, 1)
	go func() { done <- a.AutoPipeliner.Process(ctx, cmd) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The reply may yet come; the call stays in the auto-pipeline.
		return &OutcomeUnknownError{Script: s.name, Err: ctx.Err()}
	}
}

// NotSent is the error of a call of s whose context ended (err) before it was
// sent: the script did not run.
func NotSent(s *Script, err error) error {
	return fmt.Errorf("script %s: not sent: %w", s.name, err)
}
