package postgres

import (
	"context"
	"encoding/json"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
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
	var n atomic.Int64
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpu()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			id, _ := toolrouter.ToolCallID("bench", i) // random-looking, as routes' ids are
			pcid := "call_1"
			res := &toolrouter.Result{ToolCallID: id, ProviderCallID: &pcid, PlanID: "bench", Sequence: i,
				ToolName: "test/echo", ProviderFormat: "openai", Arguments: map[string]any{"msg": "hi"}, Success: true,
				Output: json.RawMessage(`{"msg":"hi"}`), DurationMS: 0.4, ProviderMetadata: map[string]any{},
				ProviderResult: map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"msg":"hi"}`}}
			rec := toolrouter.AuditRecord{Time: time.Now(), EntryPoint: toolrouter.EntryRoute, PlanID: "bench", Sequence: &i,
				ToolCallID: id, ToolName: "test/echo", Tool: "test/echo", ArgsSHA256: "0123456789abcdef0123456789abcdef",
				Outcome: toolrouter.AuditSuccess, DurationMS: 0.4}
			if err := s.SaveResult(ctx, res, rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/float64(commits), "results/commit")
}
