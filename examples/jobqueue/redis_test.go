package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hanchat/luagen/examples/jobqueue/internal/redisgen/jobs"
	"github.com/hanchat/luagen/internal/redistest"
	"github.com/hanchat/luagen/runtime"
	"github.com/redis/go-redis/v9"
)

// The passwords of the generated users on the test's own server.
var passwords = map[string]string{
	jobs.JobqueueUser: "jobqueue-test-password-1",
	"jobs_loader":     "jobqueue-loader-test-password-2",
}

// The test's admin, appended to the generated aclfile, to set up and inspect.
const adminUser, adminPassword = "jobqueue_test_admin", "admin-test-password"

// generatedACL is the aclfile luagen acl writes for the instance, with the
// passwords above (as their SHA-256: luagen reads them from 0600 files), run
// as the module's tool (go tool luagen, its go.mod's tool directive).
func generatedACL(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"tool", "luagen", "acl", "--spec", "keyspec.yaml", "--lua", "lua", "--instance", "jobs"}
	for user, pw := range passwords {
		p := filepath.Join(dir, user)
		if err := os.WriteFile(p, []byte(pw), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--password-file", user+"="+p)
	}
	cmd := exec.Command("go", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool luagen acl: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// On a real redis-server started under the generated aclfile: the loader
// user loads the scripts on the server (and nothing else); the application
// user runs the queue (enqueue, claim under a lease the server expires,
// complete), may not load a script itself, and reaches no key outside jq:.
// After a SCRIPT FLUSH, WithLoader recovers through the loader.
func TestQueueUnderTheGeneratedACL(t *testing.T) {
	redistest.Need(t)
	ctx := context.Background()
	aclfile := generatedACL(t)
	if !strings.Contains(aclfile, "user jobqueue reset on ") || !strings.Contains(aclfile, "~jq:") {
		t.Fatalf("the generated aclfile:\n%s", aclfile)
	}
	srv := redistest.Start(t, redistest.WithACL(aclfile+"user "+adminUser+" on >"+adminPassword+" ~* &* +@all\n"),
		redistest.WithAdmin(adminUser, adminPassword))
	as := func(user string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: user, Password: passwords[user], MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	loader, app := as("jobs_loader"), as(jobs.JobqueueUser)

	report, err := runtime.PreloadNodes(ctx, loader, jobs.AllScripts()...)
	if err != nil || len(report.Nodes) != 1 || len(report.Nodes[0].Loaded) != len(jobs.AllScripts()) {
		t.Fatalf("preload as the loader: %v\n%s", err, report)
	}
	if err := loader.Get(ctx, "jq:emails:ready").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("the loader read a key: %v", err)
	}
	scripts, err := jobs.NewScripts(jobs.Clients{DB0: app})
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(scripts, "emails")
	if err != nil {
		t.Fatal(err)
	}
	if stored, err := q.Enqueue(ctx, id(1), []byte("mail 1"), 0); err != nil || !stored {
		t.Fatalf("enqueue: %v %v", stored, err)
	}
	job, ok, err := q.Claim(ctx, "w1")
	if err != nil || !ok || job.ID != id(1) || string(job.Payload) != "mail 1" {
		t.Fatalf("claim: %+v %v %v", job, ok, err)
	}
	admin := srv.Admin()
	lease := "jq:emails:job:" + id(1) + ":lease"
	if pttl := admin.PTTL(ctx, lease).Val(); pttl <= 0 || pttl > jobs.LeaseTTL {
		t.Fatalf("the lease's PTTL on the server: %v, want (0, %v]", pttl, jobs.LeaseTTL)
	}
	if ttl := admin.PTTL(ctx, "jq:emails:job:"+id(1)).Val(); ttl != -1 {
		t.Fatalf("the job's PTTL: %v, want -1 (no TTL: ttl none)", ttl)
	}
	if err := q.Complete(ctx, job.ID, "w1"); err != nil {
		t.Fatal(err)
	}
	if n := admin.Exists(ctx, "jq:emails:job:"+id(1), lease, "jq:emails:active").Val(); n != 0 {
		t.Fatalf("%d of the completed job's keys are left", n)
	}

	// The application user may not load scripts or reach other keys.
	for name, err := range map[string]error{
		"SCRIPT LOAD":            app.ScriptLoad(ctx, "return 1").Err(),
		"GET outside its prefix": app.Get(ctx, "other:key").Err(),
		"KEYS":                   app.Keys(ctx, "*").Err(),
	} {
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%s as the application user: %v, want NOPERM", name, err)
		}
	}

	// After a SCRIPT FLUSH the application user cannot reload a script...
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, id(2), []byte("mail 2"), 0); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("enqueue after SCRIPT FLUSH without a loader: %v, want NOPERM", err)
	}
	// ...and with WithLoader it loads through the loader's client.
	runtime.WithLoader(app, loader, jobs.AllScripts()...)
	if stored, err := q.Enqueue(ctx, id(2), []byte("mail 2"), time.Second); err != nil || !stored {
		t.Fatalf("enqueue after SCRIPT FLUSH with WithLoader: %v %v", stored, err)
	}
	if err := app.ScriptLoad(ctx, "return 2").Err(); !errors.Is(err, runtime.ErrUndeclaredScript) {
		t.Fatalf("an undeclared script through WithLoader: %v, want ErrUndeclaredScript", err)
	}
}
