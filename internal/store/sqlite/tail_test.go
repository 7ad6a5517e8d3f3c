//go:build linux

package sqlite

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// BenchmarkCommitTail is the group commit's tail (issue 37): b.N routes
// (a result, its audit record and its ledger entry each, as
// BenchmarkCommitGroup/spend) committed in groups on the store as Open
// makes it: rate=1000, 10 routes every 10 ms, as the writer commits them
// at 1,000 routes/s with its linger (the pace of bench-compare's fixed-rate
// run); rate=max, 16 routes a group back to back, the most the writer can
// commit. Per commit it records the wall time and the CPU time of the
// writer's thread (the latter does not move with the machine's load),
// and whether it checkpointed in its own path (ckpt-commits: SQLite's
// automatic checkpoint, which runs at the end of a commit that leaves
// wal_autocheckpoint pages in the log, or the group commit's catch-up,
// afterCommit); wal-max-pages is the most the log held after a commit,
// bg-ckpts the checkpointer's passes beside the commits. Reported: the
// commits' p50, p99.9 and max of both, and the process's CPU per route
// (cpu-ns/op, the checkpointer's included). Run with a fixed -benchtime
// (e.g. 60000x for rate=max, 20000x for rate=1000: 20 s).
func BenchmarkCommitTail(b *testing.B) {
	b.Run("rate=1000", func(b *testing.B) { benchCommitTail(b, 10, 10*time.Millisecond) })
	b.Run("rate=max", func(b *testing.B) { benchCommitTail(b, 16, 0) })
}

// benchCommitTail commits groups of size routes, one every pace (back to
// back when 0).
func benchCommitTail(b *testing.B, size int, pace time.Duration) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "tail.db")
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	// The writer's goroutine stays on this thread, so that its CPU clock
	// is the commits'.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var tick <-chan time.Time
	if pace > 0 {
		t := time.NewTicker(pace)
		defer t.Stop()
		tick = t.C
	}
	var wall, cpu []time.Duration
	ckpts := 0
	var maxFrames int64
	var ws []writebehind.Write
	routes := 0
	b.ReportAllocs()
	b.ResetTimer()
	io0 := procIO(b)
	start := storebench.CPU()
	for i := range b.N {
		seq := int64(i)
		id, _ := toolrouter.ToolCallID("bench", seq)
		res, rec := storebench.Route(id, seq)
		e := storebench.Settled(res, rec)
		rec.Spend = &e
		body, _ := res.Encoded()
		ws = append(ws, writebehind.Write{SQL: saveResultSQL, Row: true, Key: id,
			Args: []any{id, res.PlanID, string(body), sqliteTimeOf(s.Now())}})
		ws = appendAuditWrites(ws, []toolrouter.AuditRecord{rec})
		if routes++; routes < size && i < b.N-1 {
			continue
		}
		if tick != nil {
			<-tick
		}
		ups := s.ckpt.catchUps.Load()
		t0, c0 := time.Now(), threadCPU()
		if err := s.commit(ctx, ws); err != nil {
			b.Fatal(err)
		}
		cpu = append(cpu, threadCPU()-c0)
		wall = append(wall, time.Since(t0))
		n := walFrames(b, path)
		if n >= walLimit || s.ckpt.catchUps.Load() != ups {
			ckpts++
		}
		maxFrames = max(maxFrames, n)
		ws, routes = ws[:0], 0
	}
	b.StopTimer()
	b.ReportMetric(float64(storebench.CPU()-start)/float64(b.N), "cpu-ns/op")
	// Stop the checkpointer first: its pass in flight counts.
	s.stopCheckpointer()
	io := procIO(b)
	for _, k := range []string{"wchar", "syscw", "rchar", "syscr"} {
		b.ReportMetric(float64(io[k]-io0[k])/float64(b.N), k+"/op")
	}
	b.ReportMetric(float64(len(wall)), "commits")
	b.ReportMetric(float64(ckpts), "ckpt-commits")
	b.ReportMetric(float64(maxFrames), "wal-max-pages")
	b.ReportMetric(float64(s.ckpt.passes.Load()), "bg-ckpts")
	for _, d := range []struct {
		name string
		v    []time.Duration
	}{{"wall", wall}, {"cpu", cpu}} {
		slices.Sort(d.v)
		b.ReportMetric(ms(quantile(d.v, 0.5)), d.name+"-p50-ms")
		b.ReportMetric(ms(quantile(d.v, 0.999)), d.name+"-p99.9-ms")
		b.ReportMetric(ms(d.v[len(d.v)-1]), d.name+"-max-ms")
	}
}

// threadCPU is the CPU time (user and system) of the calling thread
// (CLOCK_THREAD_CPUTIME_ID: exact, where getrusage counts in ticks).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	_, _, _ = syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// procIO is this process's I/O counters (/proc/self/io): bytes passed
// to write and read system calls (wchar, rchar) and their numbers (syscw,
// syscr), whether or not they reached the disk. Counts, not times: the
// machine's load does not move them.
func procIO(b testing.TB) map[string]int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			m[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return m
}

// walFrames is the number of frames (pages) in the log of the database at
// path: mxFrame of the wal-index header, the -shm file's bytes 16-19
// (https://sqlite.org/walformat.html#the_wal_index_file_format), little
// endian on the machines this runs on. SQLite's automatic checkpoint runs
// at the end of a commit that leaves at least wal_autocheckpoint frames;
// the next commit restarts the log.
func walFrames(b testing.TB, path string) int64 {
	f, err := os.Open(path + "-shm")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var hdr [4]byte
	if _, err := f.ReadAt(hdr[:], 16); err != nil {
		b.Fatal(err)
	}
	return int64(binary.LittleEndian.Uint32(hdr[:]))
}

// quantile is the q-quantile of sorted v (nearest rank).
func quantile(v []time.Duration, q float64) time.Duration {
	return v[min(len(v)-1, int(q*float64(len(v))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
