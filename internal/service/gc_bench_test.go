package service_test

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/benchtest"
)

// BenchmarkServiceRouteGC is BenchmarkServiceRoute as toolrouterd runs
// pinned to one core (GOMAXPROCS=1, GOGC=200): the service is first
// warmed up by 66,536 routed calls (past memory://'s bounds of 65,536
// results, audit records and ledger entries), then 20,000 more are timed
// one after another (issue 37: the tail at a fixed rate). Reported:
// gc-us/call, the collector's CPU (mark workers, assists, pauses;
// runtime/metrics) per timed call; gc-busy-us/call, the same without the
// idle mark worker (the CPU the collector took while the P had a call to
// run); gc-cycles in the timed calls; scan-heap-MB, the pointer-bearing
// heap of the last cycle (/gc/scan/heap); live-heap-MB; max-gc-pause-ms,
// the longest stop of the world for the collector (an upper bucket
// bound); and the calls' own latency in the process, p50/p99/p99.9/max
// in µs (wall time on a shared machine: compare distributions, not single
// runs). Run with -benchtime=1x; BENCH_HEAP_PROFILE=FILE writes the heap
// profile of the warmed-up service to FILE.memory (FILE.sqlite).
func BenchmarkServiceRouteGC(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	for _, st := range []struct{ name, url string }{
		{"memory", "memory://"},
		{"sqlite", "sqlite://" + b.TempDir() + "/bench.db"},
	} {
		b.Run(st.name, func(b *testing.B) { benchRouteGC(b, st.name, st.url) })
	}
}

func benchRouteGC(b *testing.B, name, url string) {
	const fill, timed = 1<<16 + 1000, 20_000
	for b.Loop() {
		h := newBenchService(b, url)
		body := []byte(`{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}`)
		c := benchtest.NewClient(h, benchRequest(body), body)
		for range fill {
			doRoute(b, c)
		}
		if p := os.Getenv("BENCH_HEAP_PROFILE"); p != "" {
			routeGCHeapProfile(b, p+"."+name) // what the filled service keeps
		}
		lat := make([]time.Duration, 0, timed)
		before := routeGCRead()
		for range timed {
			start := time.Now()
			doRoute(b, c)
			lat = append(lat, time.Since(start))
		}
		after := routeGCRead()
		slices.Sort(lat)
		q := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) }
		b.ReportMetric((after.gcCPU-before.gcCPU)/timed*1e6, "gc-us/call")
		b.ReportMetric((after.gcCPU-after.idle-before.gcCPU+before.idle)/timed*1e6, "gc-busy-us/call")
		b.ReportMetric(after.cycles-before.cycles, "gc-cycles")
		b.ReportMetric(after.scanHeap/(1<<20), "scan-heap-MB")
		b.ReportMetric(after.live/(1<<20), "live-heap-MB")
		b.ReportMetric(maxNewPause(before.pauses, after.pauses)*1e3, "max-gc-pause-ms")
		b.ReportMetric(q(0.5), "p50-us")
		b.ReportMetric(q(0.99), "p99-us")
		b.ReportMetric(q(0.999), "p99.9-us")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-us")
	}
}

type routeGC struct {
	gcCPU, idle, cycles, scanHeap, live float64
	pauses                              *metrics.Float64Histogram
}

func routeGCRead() routeGC {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/sched/pauses/total/gc:seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}}
	metrics.Read(s)
	return routeGC{gcCPU: s[0].Value.Float64(), idle: s[5].Value.Float64(), cycles: float64(s[1].Value.Uint64()), scanHeap: float64(s[2].Value.Uint64()),
		live: float64(s[3].Value.Uint64()), pauses: s[4].Value.Float64Histogram()}
}

// maxNewPause is the upper bound of the highest bucket of the pause
// histogram that gained a sample between before and after.
func maxNewPause(before, after *metrics.Float64Histogram) float64 {
	for i := len(after.Counts) - 1; i >= 0; i-- {
		if after.Counts[i] > before.Counts[i] {
			if hi := after.Buckets[i+1]; !math.IsInf(hi, 1) {
				return hi
			}
			return after.Buckets[i]
		}
	}
	return 0
}

// routeGCHeapProfile writes the live heap's profile, after a collection,
// to the file path.
func routeGCHeapProfile(b *testing.B, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
