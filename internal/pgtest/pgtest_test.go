package pgtest_test

import (
	"context"
	"testing"

	"github.com/hanchat/luagen/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// Two schemas are apart, each pool works in its own, and a schema is gone once
// its test has ended.
func TestSchemaIsPrivateAndDropped(t *testing.T) {
	pgtest.Need(t)
	ctx := context.Background()
	var schema string
	t.Run("a", func(t *testing.T) {
		a, b := pgtest.Schema(t, 2), pgtest.Schema(t, 2)
		if _, err := a.Exec(ctx, `CREATE TABLE t (n int)`); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Exec(ctx, `SELECT 1 FROM t`); err == nil {
			t.Fatal("a table of one schema is visible from the other")
		}
		if err := a.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			t.Fatal(err)
		}
	})
	c, err := pgx.Connect(ctx, pgtest.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if schema == "" || n != 0 {
		t.Fatalf("schema %q still exists (%d) after its test ended", schema, n)
	}
}
