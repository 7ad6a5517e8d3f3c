package postgres

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestConnStringSets(t *testing.T) {
	for _, tc := range []struct {
		conn, name string
		want       bool
	}{
		{"postgres://u@h/db?pool_max_conns=5", "pool_max_conns", true},
		{"postgresql://u@h/db?sslmode=disable&pool_max_conns=5", "pool_max_conns", true},
		{"postgres://u@h/db?sslmode=disable", "pool_max_conns", false},
		{"postgres://u@h/pool_max_conns", "pool_max_conns", false},
		{"host=h user=u pool_max_conns=5", "pool_max_conns", true},
		{"host=h user=u", "pool_max_conns", false},
		{"host=h connect_timeout=3", "connect_timeout", true},
	} {
		if got := connStringSets(tc.conn, tc.name); got != tc.want {
			t.Errorf("connStringSets(%q, %q) = %v", tc.conn, tc.name, got)
		}
	}
}

func TestPostgresPoolSizing(t *testing.T) {
	url := pgtest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		suffix string
		max    int32
	}{
		{"", pgDefaultMaxConns},
		{"&pool_max_conns=3", 3},
	} {
		p, err := Open(ctx, url+tc.suffix)
		if err != nil {
			t.Fatal(err)
		}
		cfg := p.pool.Config()
		if cfg.MaxConns != tc.max {
			t.Errorf("%q: MaxConns %d, want %d", tc.suffix, cfg.MaxConns, tc.max)
		}
		if cfg.ConnConfig.ConnectTimeout != pgDefaultConnectTimeout {
			t.Errorf("ConnectTimeout %v", cfg.ConnConfig.ConnectTimeout)
		}
		var app string
		if err := p.pool.QueryRow(ctx, `SHOW application_name`).Scan(&app); err != nil || app != "toolrouterd" {
			t.Errorf("application_name %q, %v", app, err)
		}
		p.Close()
	}
	p, err := Open(ctx, url+"&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.pool.Config().ConnConfig.ConnectTimeout; got != time.Second {
		t.Errorf("connect_timeout=1 gave %v", got)
	}
}

// TestMigrationsAreRecorded checks schema_migrations lists every embedded
// version once, and that the SQLite store has as many versions.
func TestMigrationsAreRecorded(t *testing.T) {
	ctx := context.Background()
	ms := sqlstore.Migrations(migrationFiles, "migrations")
	want, last := len(ms), ms[len(ms)-1].Version
	if n := len(sqlstore.Migrations(os.DirFS("../sqlite"), "migrations")); n != want {
		t.Errorf("sqlite has %d migrations, postgres %d", n, want)
	}
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var n, max int
	if err := p.pool.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil || n != want || max != last {
		t.Errorf("postgres schema_migrations: %d rows, max %d, %v; want %d, max %d", n, max, err, want, last)
	}
}

// One group commit of many results and audit records inserts them all;
// a result saved twice in the group keeps its last body.
func TestGroupCommitMultiRow(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 64 + 16 + 4 + 3
	var ws []writebehind.Write
	for i := range n {
		seq := int64(i)
		id := fmt.Sprintf("tc_%d", i)
		ws = append(ws, resultWrite(resultRow{key: id, plan: "p", body: `{"first":true}`}))
		ws = append(ws, auditWrites([]toolrouter.AuditRecord{{Time: time.Now(), EntryPoint: toolrouter.EntryRoute, PlanID: "p",
			Sequence: &seq, ToolCallID: id, ToolName: "t", Tool: "t", Outcome: toolrouter.AuditSuccess}})...)
	}
	ws = append(ws, resultWrite(resultRow{key: "tc_7", plan: "p", body: `{"tool_call_id":"tc_7"}`}))
	if err := p.commit(ctx, ws); err != nil {
		t.Fatal(err)
	}
	var results, audits int
	if err := p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM route_results), (SELECT count(*) FROM audit)`).Scan(&results, &audits); err != nil {
		t.Fatal(err)
	}
	if results != n || audits != n {
		t.Errorf("%d results, %d audit records; want %d of each", results, audits, n)
	}
	if res, err := p.GetResult(ctx, "tc_7"); err != nil || res.ToolCallID != "tc_7" {
		t.Errorf("tc_7 saved twice: %+v, %v; want the last body", res, err)
	}
}

// A group commit is all or nothing without BEGIN and COMMIT too: when a
// write of the batch fails, the rows inserted before it in the same
// batch are rolled back with it.
func TestGroupCommitIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	seq := int64(1)
	ws := append([]writebehind.Write{resultWrite(resultRow{key: "tc_1", plan: "p", body: `{}`})},
		auditWrites([]toolrouter.AuditRecord{{Time: time.Now(), EntryPoint: toolrouter.EntryRoute, PlanID: "p",
			Sequence: &seq, ToolCallID: "tc_1", ToolName: "t", Tool: "t", Outcome: toolrouter.AuditSuccess}})...)
	ws = append(ws, writebehind.Write{SQL: `UPDATE idempotency_keys SET response = $1 WHERE key = $2 AND 1/0 = 1`, Args: []any{[]byte("x"), "k"}})
	if _, err := p.pool.Exec(ctx, `INSERT INTO idempotency_keys (key, fingerprint, expires_at) VALUES ('k', 'f', now())`); err != nil {
		t.Fatal(err)
	}
	if err := p.commit(ctx, ws); err == nil {
		t.Fatal("a commit with a failing write succeeded")
	}
	var results, audits int
	if err := p.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM route_results), (SELECT count(*) FROM audit)`).Scan(&results, &audits); err != nil {
		t.Fatal(err)
	}
	if results != 0 || audits != 0 {
		t.Errorf("the failed commit left %d results, %d audit records", results, audits)
	}
	if err := p.commit(ctx, ws[:2]); err != nil {
		t.Fatal(err)
	}
	if res, err := p.GetResult(ctx, "tc_1"); err != nil || res == nil {
		t.Errorf("after a good commit: %v", err)
	}
}

// TestGroupCommitLingers: the store's group commit waits up to
// pgWriteLinger for more writes when nobody waits for it, as SQLite's does,
// so that routes at a moderate rate share commits (WAL flushes) instead of
// taking one each (BenchmarkWALPerRoute: 1.78 commits per route at 1,000
// routes/s without it, 1.1 with it).
func TestGroupCommitLingers(t *testing.T) {
	p, err := Open(context.Background(), pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if pgWriteLinger <= 0 || p.w.Linger != pgWriteLinger {
		t.Errorf("group commit linger %v, want %v (> 0)", p.w.Linger, pgWriteLinger)
	}
}
