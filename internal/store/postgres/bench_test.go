package postgres

import (
	"context"

	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"

	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
)

// BenchmarkSaveResult is the write path of one routed call on PostgreSQL,
// as the SQLite store's benchmark of the same name: results with their
// audit records from parallel routes through the group commit.
// cpu-ns/op is this process's CPU per result (the server's is not in it).
func BenchmarkSaveResult(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.Start(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	commits := 0
	s.w.Close()
	s.w = writebehind.New(func(ctx context.Context, ws []writebehind.Write) error {
		commits++
		return s.commit(ctx, ws)
	}, pgWriteQueue, pgWriteBatch)
	storebench.BenchSaveResult(b, s, func() int { return commits })
}
