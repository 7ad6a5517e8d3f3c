package postgres_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/postgres"
)

// A store opened while its server is down is not ready, says why without
// the password, and closes promptly; a malformed URL is still an error.
func TestOpenLazyWhileDown(t *testing.T) {
	var retries atomic.Int32
	s, err := postgres.OpenLazy("postgres://user:s3cret-pw@127.0.0.1:1/db?connect_timeout=1", func(int, error) { retries.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	err = s.Ping(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not ready") || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("Ping = %v", err)
	}
	if retries.Load() < 1 {
		t.Error("the failed first attempt was not reported")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.OpenLazy("postgres://x@127.0.0.1:5432/db?pool_max_conns=zero", nil); err == nil {
		t.Fatal("malformed URL accepted")
	}
}
