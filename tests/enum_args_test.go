package tests

import (
	"context"
	"errors"
	"testing"

	enums "github.com/hanchat/luagen/gen/testdata/features/enumargs/golden/jobs"
	"github.com/hanchat/luagen/runtime"
)

// ARGV of type enum through the generated wrappers, on a server started from
// the generated aclfile, as the application user: both push commands the enum
// allows run (the ACL grants each), the counts per state read the keys each
// value names, and a value outside the enum is refused before anything is
// sent.
func TestEnumArgsUnderTheGeneratedACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, clients := featureServer(t, "../gen/testdata/features/enumargs", "jobs")
	if err := runtime.Preload(ctx, clients["jobs_loader"], enums.AllScripts()...); err != nil {
		t.Fatalf("SCRIPT LOAD as the loader: %v", err)
	}
	s, err := enums.NewScripts(enums.Clients{DB0: clients["jobs"]})
	if err != nil {
		t.Fatal(err)
	}
	wait, err := enums.NewWaitKey("emails")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Push(ctx, wait, enums.PushArgs{How: enums.PushCmdRPUSH, Job: "j1"}); err != nil || n != 1 {
		t.Fatalf("RPUSH: %d %v", n, err)
	}
	if n, err := s.Push(ctx, wait, enums.PushArgs{How: enums.PushCmdLPUSH, Job: "j0"}); err != nil || n != 2 {
		t.Fatalf("LPUSH: %d %v", n, err)
	}
	if first := srv.Client(0, admin).LIndex(ctx, wait.String(), 0).Val(); first != "j0" {
		t.Fatalf("the head is %q, want j0 (LPUSH)", first)
	}
	q, err := enums.NewQueueKey("emails")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Counts(ctx, q, enums.CountsArgs{States: []enums.JobState{enums.JobStateWait, enums.JobStateActive, enums.JobStateWaitingChildren}})
	if err != nil || len(got) != 3 || got[0] != "2" || got[1] != "0" || got[2] != "0" {
		t.Fatalf("counts: %v %v, want [2 0 0]", got, err)
	}
	if _, err := s.Push(ctx, wait, enums.PushArgs{How: "FLUSHALL", Job: "j2"}); !errors.Is(err, runtime.ErrInvalidArg) {
		t.Fatalf("a command outside the enum: %v, want runtime.ErrInvalidArg", err)
	}
	if n := srv.Client(0, admin).LLen(ctx, wait.String()).Val(); n != 2 {
		t.Fatalf("%d jobs after a refused push, want 2", n)
	}
}
