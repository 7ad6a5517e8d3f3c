package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/store/postgres"
	"github.com/toolrouterd/toolrouterd/internal/store/sqlite"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestOpenRoutesEveryScheme checks that each TOOLROUTER_STORE scheme
// (docs/configuration.md "Configuration") reaches its backend through store.Open.
func TestOpenRoutesEveryScheme(t *testing.T) {
	isMemory := func(s store.Store) bool { _, ok := s.(*memory.Store); return ok }
	isSQLite := func(s store.Store) bool { _, ok := s.(*sqlite.Store); return ok }
	isPostgres := func(s store.Store) bool { _, ok := s.(*postgres.Store); return ok }
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
		want func(store.Store) bool
	}{
		{"memory", func(*testing.T) string { return "memory://" }, isMemory},
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "t.db") }, isSQLite},
		{"postgres", func(t *testing.T) string { return pgtest.Start(t) }, isPostgres},
		{"postgresql", func(t *testing.T) string { return "postgresql" + strings.TrimPrefix(pgtest.Start(t), "postgres") }, isPostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := tc.url(t)
			s, err := store.Open(ctx, url)
			if err != nil {
				t.Fatalf("%s: %v", url, err)
			}
			defer s.Close()
			if !tc.want(s) {
				t.Errorf("%s opened a %T", url, s)
			}
			if err := s.Ping(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"redis://x", "nothing", "sqlite://", ""} {
		if s, err := store.Open(context.Background(), u); err == nil {
			s.Close()
			t.Errorf("%q accepted", u)
		}
	}
}
