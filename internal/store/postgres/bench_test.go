package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"

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

// BenchmarkSaveResultSettled is BenchmarkSaveResult for a priced call
// with its spend ledger entry (storebench.BenchSaveResultSettled):
// settle=separate as issue 36 first wrote it (SettleSpend per call, a
// round trip and a commit of its own), settle=grouped as it is written
// now (in the result's group commit).
func BenchmarkSaveResultSettled(b *testing.B) {
	for _, separate := range []bool{true, false} {
		name := "settle=grouped"
		if separate {
			name = "settle=separate"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, pgtest.Start(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var commits atomic.Int64
			s.w.Close()
			s.w = writebehind.New(func(ctx context.Context, ws []writebehind.Write) error {
				commits.Add(1)
				return s.commit(ctx, ws)
			}, pgWriteQueue, pgWriteBatch)
			storebench.BenchSaveResultSettled(b, s, separate, commits.Load)
		})
	}
}

// BenchmarkWALPerRoute is what a route costs PostgreSQL's log at a fixed
// rate: b.N routes (a sequence, then the result and its audit record
// written behind), one every millisecond (1,000 routes/s, each alone, as
// under the fixed-rate bench), then the server's count of commits
// (pg_stat_database xact_commit) and of WAL writes and syncs (pg_stat_wal,
// each a flush of the log to the kernel; syncs are 0 under pgtest's
// fsync=off) per route, the store's connections committing synchronously
// as PostgreSQL's default has it. The store is closed first, so that its backends
// report their counts as they exit. Run with -benchtime=2000x.
func BenchmarkWALPerRoute(b *testing.B) {
	ctx := context.Background()
	url := pgtest.Start(b)
	// pgtest's server commits asynchronously; the store's connections
	// commit as in production (each commit waits for its WAL flush).
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	s, err := Open(ctx, url+sep+"synchronous_commit=on")
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	stats := func() (commits, writes, syncs int64) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		// The store's backends report their counts as they exit: wait
		// for them to be gone (a closed pool's are, soon after).
		for {
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'toolrouterd'`).Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n == 0 || !closed {
				break
			}
			time.Sleep(10 * time.Millisecond) // polling the server, not synchronising goroutines
		}
		if err := conn.QueryRow(ctx, `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
			wal_write, wal_sync FROM pg_stat_wal`).Scan(&commits, &writes, &syncs); err != nil {
			b.Fatal(err)
		}
		return commits, writes, syncs
	}
	// Migrations and connections first, then the counts before.
	if _, err := s.NextSequence(ctx, "warm"); err != nil {
		b.Fatal(err)
	}
	c0, w0, s0 := stats()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		seq, err := s.NextSequence(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		id, _ := toolrouter.ToolCallID("bench", seq)
		res, rec := storebench.Route(id, int64(i))
		if err := s.SaveResult(ctx, res, rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	closed = true
	c1, w1, s1 := stats()
	// The stats connection's own commits (one per stats() call) are left out.
	b.ReportMetric(float64(c1-c0-1)/float64(b.N), "commits/route")
	b.ReportMetric(float64(w1-w0)/float64(b.N), "wal-writes/route")
	b.ReportMetric(float64(s1-s0)/float64(b.N), "wal-syncs/route")
}

// backendsCPU is the CPU time (user and system, in ns) the server's
// backends of the store's connections have used, read from /proc; -1
// where the server runs elsewhere (pgtest's is a local process).
func backendsCPU(b *testing.B, conn *pgx.Conn) int64 {
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = 'toolrouterd'`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return -1
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th (clock ticks, 100 a second).
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return ticks * int64(10*time.Millisecond)
}

// BenchmarkWALBytesPerRoute is what a routed call's writes (its result,
// audit record and settled ledger entry, in group commits of 16 calls)
// add to PostgreSQL's log, in bytes per call, after a checkpoint, with
// 100,000 calls stored before. Bytes, not times: the machine's load does
// not move them; pg-cpu-ns/route is the CPU of the server's backends
// serving those commits (10 ms ticks of /proc). pgtest's server runs with full_page_writes=off, so the
// whole page a shipped server logs when an index page is first changed
// after a checkpoint (about one per call for an index written at random
// places, a hashed id's) is not in the figure. Run with -benchtime=5000x.
func BenchmarkWALBytesPerRoute(b *testing.B) {
	ctx := context.Background()
	url := pgtest.Start(b)
	s, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var i int64
	commit := func(n int) {
		var ws []writebehind.Write
		for range n {
			id, _ := toolrouter.ToolCallID("bench", i)
			res, rec := storebench.Route(id, i)
			e := storebench.Settled(res, rec)
			rec.Spend = &e
			body, _ := res.Encoded()
			ws = append(ws, resultWrite(resultRow{key: res.ToolCallID, plan: res.PlanID, body: string(body)}))
			ws = appendAuditWrites(ws, []toolrouter.AuditRecord{rec})
			i++
		}
		if err := s.commit(ctx, ws); err != nil {
			b.Fatal(err)
		}
	}
	for range 100_000 / 64 {
		commit(64)
	}
	if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
		b.Fatal(err)
	}
	var start string
	if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&start); err != nil {
		b.Fatal(err)
	}
	cpu0 := backendsCPU(b, conn)
	b.ResetTimer()
	for n := b.N; n > 0; n -= 16 {
		commit(min(n, 16))
	}
	b.StopTimer()
	if cpu0 >= 0 {
		b.ReportMetric(float64(backendsCPU(b, conn)-cpu0)/float64(b.N), "pg-cpu-ns/route")
	}
	var bytes int64
	if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, start).Scan(&bytes); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(bytes)/float64(b.N), "wal-B/route")
}
