package store

import (
	"context"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
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
		p, err := OpenPostgres(ctx, url+tc.suffix)
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
	p, err := OpenPostgres(ctx, url+"&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.pool.Config().ConnConfig.ConnectTimeout; got != time.Second {
		t.Errorf("connect_timeout=1 gave %v", got)
	}
}

// TestMigrationsAreRecorded checks schema_migrations lists every embedded
// version once, for both SQL stores.
func TestMigrationsAreRecorded(t *testing.T) {
	ctx := context.Background()
	want := len(migrations("sqlite"))
	if want != len(migrations("postgres")) {
		t.Errorf("sqlite has %d migrations, postgres %d", want, len(migrations("postgres")))
	}
	s, err := OpenSQLite(ctx, t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n, max int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil || n != want || max != want {
		t.Errorf("sqlite schema_migrations: %d rows, max %d, %v; want %d", n, max, err, want)
	}

	p, err := OpenPostgres(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.pool.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil || n != want || max != want {
		t.Errorf("postgres schema_migrations: %d rows, max %d, %v; want %d", n, max, err, want)
	}
}
