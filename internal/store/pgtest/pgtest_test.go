package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestStartGivesFreshDatabases(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.Start(t), pgtest.Start(t)
	if a == b {
		t.Fatalf("two Start calls gave the same database %s", a)
	}
	for _, u := range []string{a, b} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var tables int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
			t.Errorf("%s: %d tables, %v; want a fresh, empty database", u, tables, err)
		}
		// A table in one database is not in the other.
		if _, err := conn.Exec(ctx, `CREATE TABLE t (x int)`); err != nil {
			t.Error(err)
		}
		conn.Close(ctx)
	}
}
