// Package storebench is the write-path benchmark shared by the SQL stores' own
// (internal) benchmarks; it imports no store, so they can use it.
package storebench

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// BenchSaveResult is the write path of one routed call: a result like the
// load bench's echo, with its audit record, saved from parallel routes and
// committed (flush at the end, inside the timing). cpu-ns/op is the
// process's CPU time per result (a store's writer goroutine included), the
// figure the pinned load bench charges; commits, when set, counts the
// store's commits for results/commit.
func BenchSaveResult(b *testing.B, st interface {
	SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error
	Flush(ctx context.Context) error
}, commits func() int) {
	ctx := context.Background()
	var n atomic.Int64
	cpu := CPU
	b.ReportAllocs()
	b.ResetTimer()
	start := cpu()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			id, _ := toolrouter.ToolCallID("bench", i) // random-looking, as routes' ids are
			res, rec := Route(id, i)
			if err := st.SaveResult(ctx, res, rec); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
	if commits != nil {
		b.ReportMetric(float64(b.N)/float64(commits()), "results/commit")
	}
}

// BenchSaveResultSettled is BenchSaveResult for a priced call, with its
// spend ledger entry: separate writes it as issue 36 first did (SaveResult,
// then SettleSpend: a write of its own per call), else it rides on the
// audit record into the result's group commit. txn/op counts the write
// transactions per call (commits, which counts the store's group commits,
// plus the separate settles).
func BenchSaveResultSettled(b *testing.B, st interface {
	SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error
	SettleSpend(ctx context.Context, e toolrouter.SpendEntry) error
	Flush(ctx context.Context) error
}, separate bool, commits func() int64) {
	ctx := context.Background()
	var n, settles atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := CPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			id, _ := toolrouter.ToolCallID("bench", i)
			res, rec := Route(id, i)
			e := toolrouter.SpendEntry{ID: toolrouter.ScopedKey(res.Client, id), At: rec.Time, Tool: "test/echo", Currency: "USD", Amount: 2000}
			if !separate {
				rec.Spend = &e
			}
			if err := st.SaveResult(ctx, res, rec); err != nil {
				b.Error(err)
				return
			}
			if separate {
				settles.Add(1)
				if err := st.SettleSpend(ctx, e); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(CPU()-start)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(commits()+settles.Load())/float64(b.N), "txn/op")
}

// Route is the result and audit record of one routed call like the load
// bench's echo: tool call id, sequence i.
func Route(id string, i int64) (*toolrouter.Result, toolrouter.AuditRecord) {
	pcid := "call_1"
	res := &toolrouter.Result{ToolCallID: id, ProviderCallID: &pcid, PlanID: "bench", Sequence: i,
		ToolName: "test/echo", ProviderFormat: "openai", Arguments: map[string]any{"msg": "hi"}, Success: true,
		Output: json.RawMessage(`{"msg":"hi"}`), DurationMS: 0.4, ProviderMetadata: map[string]any{},
		ProviderResult: map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"msg":"hi"}`}}
	rec := toolrouter.AuditRecord{Time: time.Now(), EntryPoint: toolrouter.EntryRoute, PlanID: "bench", Sequence: &i,
		ToolCallID: id, ToolName: "test/echo", Tool: "test/echo", ArgsSHA256: "0123456789abcdef0123456789abcdef",
		Outcome: toolrouter.AuditSuccess, DurationMS: 0.4}
	res.JSON, _ = json.Marshal(res) // as the router encodes a final result once, for the store and the answer
	return res, rec
}

// Settled is the spend ledger entry the cost stage settles for Route's
// call of an unpriced tool (every call that ran has one): it rides on the
// audit record into the result's group commit.
func Settled(res *toolrouter.Result, rec toolrouter.AuditRecord) toolrouter.SpendEntry {
	return toolrouter.SpendEntry{ID: toolrouter.ScopedKey(res.Client, res.ToolCallID), At: rec.Time, Client: res.Client,
		Tool: res.ToolName, Unpriced: true}
}

// CPU is the CPU time (user and system) this process has used.
func CPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RSS is this process's resident set size in bytes (VmRSS of
// /proc/self/status; 0 where there is none).
func RSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Footprint saves calls routed calls (Route) into st one after another
// and, at each of the marks (counts of calls), after a garbage
// collection, reports the process's RSS and live heap in MB as metrics
// named rss-MB@<mark> and heap-MB@<mark>: what a store keeps per call, which
// its retention bounds (issue 37: flat over a million calls).
func Footprint(b *testing.B, st interface {
	SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error
	Flush(ctx context.Context) error
}, marks ...int64) {
	ctx := context.Background()
	var i int64
	for _, m := range marks {
		for ; i < m; i++ {
			id, _ := toolrouter.ToolCallID("bench", i)
			res, rec := Route(id, i)
			if err := st.SaveResult(ctx, res, rec); err != nil {
				b.Fatal(err)
			}
		}
		if err := st.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		label := strconv.FormatInt(m/1000, 10) + "k"
		b.ReportMetric(float64(RSS())/(1<<20), "rss-MB@"+label)
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB@"+label)
	}
}
