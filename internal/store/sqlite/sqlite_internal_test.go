package sqlite

import (
	"context"
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
