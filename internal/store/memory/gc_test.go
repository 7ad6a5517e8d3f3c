package memory_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// gcSample reads the collector's figures this file reports.
type gcSample struct {
	markCPU, scanHeap, live float64
}

func readGC() gcSample {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"}, {Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}, {Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return gcSample{markCPU: s[0].Value.Float64() + s[1].Value.Float64() + s[2].Value.Float64(),
		scanHeap: float64(s[3].Value.Uint64()), live: float64(s[4].Value.Uint64())}
}

// fillToBound saves DefaultMaxResults+DefaultMaxAudit routed calls
// (storebench.Route, with their spend ledger entries) into m: past its bounds, as a long-running memory://
// store is.
func fillToBound(tb testing.TB, m *memory.Store) {
	tb.Helper()
	ctx := context.Background()
	for i := range int64(memory.DefaultMaxResults + memory.DefaultMaxAudit) {
		id, _ := toolrouter.ToolCallID("bench", i)
		res, rec := storebench.Route(id, i)
		rec.Client = "client-" + id[:8]   // a string of its own per record, as a tenant's name is not shared
		e := storebench.Settled(res, rec) // every call that ran has its ledger entry
		rec.Spend = &e
		if err := m.SaveResult(ctx, res, rec); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkGCMark fills a memory:// store to its bounds (65,536 results,
// audit records and ledger entries) and reports what one garbage collection of the
// process then costs (issue 37, the tail at a fixed rate on one core):
// scan-heap-MB, the heap the collector had to scan (pointer-bearing
// memory: /gc/scan/heap), live-heap-MB, and mark-ms, the CPU time of one
// cycle's mark phase (its workers and assists, from runtime/metrics),
// median of the timed cycles. Run with -benchtime=1x: one store, 9 cycles.
func BenchmarkGCMark(b *testing.B) {
	for b.Loop() {
		m := memory.New()
		fillToBound(b, m)
		runtime.GC()
		marks := make([]float64, 0, 9)
		var after gcSample
		for range 9 {
			before := readGC()
			runtime.GC()
			after = readGC()
			marks = append(marks, after.markCPU-before.markCPU)
		}
		runtime.KeepAlive(m)
		b.ReportMetric(median(marks)*1e3, "mark-ms")
		b.ReportMetric(after.scanHeap/(1<<20), "scan-heap-MB")
		b.ReportMetric(after.live/(1<<20), "live-heap-MB")
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// BenchmarkSaveResult is the store's write path of one routed call (a
// result and its audit record, storebench.BenchSaveResult): what keeping
// records encoded costs the writer.
func BenchmarkSaveResult(b *testing.B) {
	storebench.BenchSaveResult(b, memory.New(), nil)
}
