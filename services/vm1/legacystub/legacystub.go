// Package legacystub is the Message Safety test stub v1's task state in VM1 DB2
// (seed 000 §7), which lives only until the cutover to Message Safety v2 on VM2.
//
// While keyspec.yaml marks vm1.dbs.db2 `legacy: {state: alive}`, a task is a hash
// han:legacy:safety-task:{task_id} holding a random verdict state and a poll
// counter. Its 30 min TTL outlasts the poll and recovery budgets declared beside
// the state (`luagen lint` rule legacy-budget); polls do not extend it. The
// get+increment poll script exists only here: VM2 forbids it.
//
// # Cutover
//
// Production v2 keeps no task state in this Redis. The cutover, in order:
//
//  1. Point every caller at Message Safety v2 and stop every stub instance
//     (Stub.Close in each process; Close is what Cutover does first, and it
//     waits for the stub's calls in flight).
//  2. Run Cutover against DB2 while the ACL still grants han:legacy:*: it
//     deletes every han:legacy:* key in bounded SCAN/UNLINK batches and repeats
//     the sweep until one finds nothing, so no stub key is left.
//  3. Set vm1.dbs.db2.legacy.state to cut_over in keyspec.yaml and run
//     `luagen generate`: the task key, the stub scripts, SAFETY_STUB_REDIS_URL and
//     the han:legacy: ACL prefix leave generated/. This package then no longer
//     compiles and is deleted in the same change.
//  4. Deploy the new ACL and drop SAFETY_STUB_REDIS_URL from the environment.
package legacystub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/hanchat/luagen/generated/vm1"
)

// State is the random verdict the stub gives a task.
type State string

// The stub's states. They are test verdicts, not Message Safety's.
const (
	StateAllowed State = "allowed"
	StateFlagged State = "flagged"
	StateBlocked State = "blocked"
)

// States lists every State, the stub's allow-list.
var States = []State{StateAllowed, StateFlagged, StateBlocked}

// Sentinel errors, matched with errors.Is.
var (
	// ErrCutOver: the stub was closed for the cutover; it creates and polls nothing.
	ErrCutOver = errors.New("legacystub: the stub is cut over")
	// ErrTaskExists: a task with that id exists already.
	ErrTaskExists = errors.New("legacystub: task exists")
	// ErrTaskNotFound: no such task (never created, expired, or deleted by the cutover).
	ErrTaskNotFound = errors.New("legacystub: task not found")
)

// Stub creates and polls the stub's tasks through vm1's generated scripts (DB2).
// It is safe for concurrent use.
type Stub struct {
	scripts *vm1.Scripts

	mu       sync.Mutex
	closed   bool
	inFlight int           // Create and Poll calls admitted and not returned yet
	drained  chan struct{} // closed once inFlight is 0 after Close
}

// New returns a Stub on scripts, which need a DB2 client (without one, every
// call fails with runtime.ErrNoClient).
func New(scripts *vm1.Scripts) *Stub {
	return &Stub{scripts: cmp.Or(scripts, &vm1.Scripts{}), drained: make(chan struct{})}
}

// Close stops the stub for the cutover: Create and Poll fail with ErrCutOver from
// now on. It is a barrier: it returns once every Create and Poll that started
// before it has returned, so none of their writes can land after Close. It fails
// with ctx's error (the stub stays closed) when ctx ends first. It is idempotent.
func (s *Stub) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		if s.inFlight == 0 {
			close(s.drained)
		}
	}
	drained := s.drained
	s.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("legacystub: close: calls still in flight: %w", ctx.Err())
	}
}

// enter admits one call, unless the stub is closed; an admitted call must leave.
func (s *Stub) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inFlight++
	return true
}

func (s *Stub) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if s.closed && s.inFlight == 0 {
		close(s.drained)
	}
}

// Create makes the task taskID (a UUID) with a random State and returns it.
func (s *Stub) Create(ctx context.Context, taskID string) (State, error) {
	return s.create(ctx, taskID, States[rand.IntN(len(States))])
}

func (s *Stub) create(ctx context.Context, taskID string, state State) (State, error) {
	if !s.enter() {
		return "", ErrCutOver
	}
	defer s.leave()
	key, err := vm1.NewLegacySafetyTaskKey(taskID)
	if err != nil {
		return "", fmt.Errorf("legacystub: create: %w", err)
	}
	created, err := s.scripts.StubTaskCreate(ctx, key, vm1.StubTaskCreateArgs{State: string(state)})
	if err != nil {
		return "", fmt.Errorf("legacystub: create: %w", err)
	}
	if !created {
		return "", ErrTaskExists
	}
	return state, nil
}

// Poll is one poll of a task: its state and how many polls it has had,
// this one included.
type Poll struct {
	State State
	Polls int64
}

// Poll reads the task's state and counts the poll, atomically.
func (s *Stub) Poll(ctx context.Context, taskID string) (Poll, error) {
	if !s.enter() {
		return Poll{}, ErrCutOver
	}
	defer s.leave()
	key, err := vm1.NewLegacySafetyTaskKey(taskID)
	if err != nil {
		return Poll{}, fmt.Errorf("legacystub: poll: %w", err)
	}
	r, err := s.scripts.StubTaskPoll(ctx, key)
	if err != nil {
		return Poll{}, fmt.Errorf("legacystub: poll: %w", err)
	}
	if !r.Found {
		return Poll{}, ErrTaskNotFound
	}
	st := State(r.State)
	if !st.valid() {
		return Poll{}, fmt.Errorf("legacystub: poll: the task holds a state outside the stub's allow-list")
	}
	return Poll{State: st, Polls: r.Polls}, nil
}

func (st State) valid() bool {
	for _, v := range States {
		if st == v {
			return true
		}
	}
	return false
}
