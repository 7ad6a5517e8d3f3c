package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
)

// TestMigrationsAreRecorded checks schema_migrations lists every embedded
// version once.
func TestMigrationsAreRecorded(t *testing.T) {
	ctx := context.Background()
	ms := sqlstore.Migrations(migrationFiles, "migrations")
	want, last := len(ms), ms[len(ms)-1].Version
	s, err := Open(ctx, t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n, max int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil || n != want || max != last {
		t.Errorf("sqlite schema_migrations: %d rows, max %d, %v; want %d, max %d", n, max, err, want, last)
	}
}

// A store that stops without Close (a crash) leaves its block reserved:
// the next process skips ahead, never repeating a sequence it handed out.
func TestCrashSkipsAheadNeverRepeats(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if n, err := s.NextSequence(ctx, "p"); err != nil || n != int64(i) {
			t.Fatalf("%d: %d %v", i, n, err)
		}
	}
	s.db.Close() // no Close: no give-back, as after kill -9
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n, err := s2.NextSequence(ctx, "p"); err != nil || n != seqBlock {
		t.Errorf("after a crash: %d, %v; want %d (the reserved block skipped)", n, err, seqBlock)
	}
}
