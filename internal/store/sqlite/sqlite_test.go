package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/store/sqlite"
	"github.com/toolrouterd/toolrouterd/internal/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Replicas: true, Durable: true,
		Database: func(t *testing.T, now func() time.Time) func() store.Store {
			path := filepath.Join(t.TempDir(), "toolrouter.db")
			return func() store.Store {
				t.Helper()
				s, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				s.Now = now
				return s
			}
		},
	})
}
