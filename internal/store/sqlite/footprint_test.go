package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// BenchmarkFileBytes is what the file keeps per routed call: 20,000 calls
// like the load bench's echo (storebench.Route, a result and its audit
// record; with spend, the settled ledger entry every call that ran has)
// saved through the group commit, the log checkpointed into the file,
// then the file's bytes per call (file-B/call) and each table's and
// index's (dbstat, B/call of <name>). Run with -benchtime=1x.
func BenchmarkFileBytes(b *testing.B) {
	for _, spend := range []bool{false, true} {
		name := "ledger=no"
		if spend {
			name = "ledger=yes"
		}
		b.Run(name, func(b *testing.B) { benchFileBytes(b, spend) })
	}
}

func benchFileBytes(b *testing.B, spend bool) {
	const calls = 20_000
	for b.Loop() {
		ctx := context.Background()
		path := filepath.Join(b.TempDir(), "bytes.db")
		s, err := Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		before := fileSize(b, path)
		for i := range int64(calls) {
			id, _ := toolrouter.ToolCallID("bench", i)
			res, rec := storebench.Route(id, i)
			if spend {
				e := storebench.Settled(res, rec)
				rec.Spend = &e
			}
			if err := s.SaveResult(ctx, res, rec); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		rows, err := s.db.QueryContext(ctx, `SELECT name, SUM(pgsize) FROM dbstat GROUP BY name`)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var name string
			var size int64
			if err := rows.Scan(&name, &size); err != nil {
				b.Fatal(err)
			}
			if size/calls > 0 {
				b.ReportMetric(float64(size)/calls, "B/call-of-"+name)
			}
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		rows.Close()
		b.ReportMetric(float64(fileSize(b, path)-before)/calls, "file-B/call")
		s.Close()
	}
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
