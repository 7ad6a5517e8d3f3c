package postgres_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/store/postgres"
	"github.com/toolrouterd/toolrouterd/internal/store/storetest"
)

// Without a PostgreSQL server (and TOOLROUTER_TEST_POSTGRES unset) the
// tests that need one skip, saying so; with CI=true they fail instead
// (pgtest).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Replicas: true, Durable: true, Dense: true,
		Database: func(t *testing.T, now func() time.Time) func() store.Store {
			url := pgtest.Start(t)
			return func() store.Store {
				t.Helper()
				s, err := postgres.Open(context.Background(), url)
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

func TestOpenPostgresFailsCleanly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, u := range []string{
		"postgres://user:s3cret-pw@127.0.0.1:1/db?connect_timeout=2", // nothing listens on port 1
		"postgres://user:s3cret-pw@127.0.0.1:5432/db?pool_max_conns=zero",
	} {
		s, err := postgres.Open(ctx, u)
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened", u)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}
