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
	want := len(sqlstore.Migrations(migrationFiles, "migrations"))
	s, err := Open(ctx, t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n, max int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil || n != want || max != want {
		t.Errorf("sqlite schema_migrations: %d rows, max %d, %v; want %d", n, max, err, want)
	}
}
