package sqlite

import (
	"context"
	"path/filepath"

	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
)

// BenchmarkSaveResult is the write path of one routed call on the default
// store: a result like the load bench's echo, with its audit record,
// queued from parallel routes and committed by the group commit (Flush at
// the end, inside the timing). cpu-ns/op is the process's CPU time per
// result (the writer goroutine included), the figure the pinned load
// bench charges.
func BenchmarkSaveResult(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	commits := 0
	s.w.Close()
	s.w = writebehind.New(func(ctx context.Context, ws []writebehind.Write) error {
		commits++
		return s.commit(ctx, ws)
	}, writeQueue, writeBatch)
	storebench.BenchSaveResult(b, s, func() int { return commits })
}
