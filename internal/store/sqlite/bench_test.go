package sqlite

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"

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
	s.w.Linger = writeLinger
	storebench.BenchSaveResult(b, s, func() int { return commits })
}

// BenchmarkCommitGroup is the group commit's cost per routed call (ns/op,
// one op = one result, its audit record and, with spend, its settled
// ledger entry, as every call that ran has) by group size, without the
// queue: what the writer charges the pinned load bench at a given rate
// (fewer, bigger groups at higher rates or with Linger). The table grows
// to b.N rows, so run it with a fixed -benchtime (e.g. 20000x) to compare.
func BenchmarkCommitGroup(b *testing.B) {
	for _, spend := range []bool{false, true} {
		for _, size := range []int{4, 16, 64} {
			name := fmt.Sprintf("routes=%d", size)
			if spend {
				name += "/spend"
			}
			b.Run(name, func(b *testing.B) { benchCommitGroup(b, size, spend) })
		}
	}
}

func benchCommitGroup(b *testing.B, size int, spend bool) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// The log is not checkpointed during the run: the commits alone are
	// measured, and the group commit counts the pages they wrote
	// (wal-pages/op).
	s.stopCheckpointer()
	s.wal.limit = math.MaxInt64
	var ws []writebehind.Write
	routes := 0
	b.ReportAllocs()
	b.ResetTimer()
	start := storebench.CPU()
	for i := range b.N {
		seq := int64(i)
		id, _ := toolrouter.ToolCallID("bench", seq)
		res, rec := storebench.Route(id, seq)
		if spend {
			e := storebench.Settled(res, rec)
			rec.Spend = &e
		}
		body, _ := res.Encoded()
		ws = append(ws, writebehind.Write{SQL: saveResultSQL, Row: true, Key: id,
			Args: []any{id, res.PlanID, string(body), sqliteTimeOf(s.Now())}})
		ws = appendAuditWrites(ws, []toolrouter.AuditRecord{rec})
		if routes++; routes == size || i == b.N-1 {
			if err := s.commit(ctx, ws); err != nil {
				b.Fatal(err)
			}
			ws, routes = ws[:0], 0
		}
	}
	b.ReportMetric(float64(storebench.CPU()-start)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(s.wal.written)/float64(b.N), "wal-pages/op")
}

// BenchmarkSaveResultSettled is BenchmarkSaveResult for a priced call
// with its spend ledger entry (storebench.BenchSaveResultSettled):
// settle=separate as issue 36 first wrote it (SettleSpend per call, an
// autocommit transaction of its own), settle=grouped as it is written now
// (in the result's group commit).
func BenchmarkSaveResultSettled(b *testing.B) {
	for _, separate := range []bool{true, false} {
		name := "settle=grouped"
		if separate {
			name = "settle=separate"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var commits atomic.Int64
			s.w.Close()
			s.w = writebehind.New(func(ctx context.Context, ws []writebehind.Write) error {
				commits.Add(1)
				return s.commit(ctx, ws)
			}, writeQueue, writeBatch)
			s.w.Linger = writeLinger
			storebench.BenchSaveResultSettled(b, s, separate, commits.Load)
		})
	}
}
