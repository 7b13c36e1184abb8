// Command elang runs the operations of Elang's SQL outbox (seed 003): one binary,
// one subcommand per process role.
//
//	elang platform:setup                         create the service tables (idempotent)
//	elang outbox:work [--batch N] [--metrics ADDR] relay committed outbox rows continuously
//	elang outbox:dispatch [--batch N]            relay what is pending once, then exit
//	elang queue:work --queue Q[,Q...] --exec PROGRAM [-- ARGS...]
//	                                             run jobs: each job's payload on PROGRAM's stdin
//	elang operations:prune [--delivered D] [--history D] [--jobs D] [--batch N]
//	                                             remove delivered rows, history and finished jobs past retention
//
// Configuration comes from the environment: DATABASE_URL (a postgres:// URL),
// ELANG_REDIS_URL (the deployment's Redis, database 0, as elang_app), optionally
// ELANG_REDIS_LOADER_URL (as elang_loader, which loads elang's scripts; else the
// deploy step loads them with luagen load), and the deployment prefix
// ELANG_REDIS_PREFIX, else derived from APP_URL. Secrets never reach the output:
// URLs are printed with their password redacted (services/secrets.RedactURL).
//
// Exit status: 0 success (a continuous command stopped by SIGINT or SIGTERM), 1 the
// command failed, 2 the command line or the configuration was wrong.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
