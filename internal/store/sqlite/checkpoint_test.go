//go:build linux

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/storebench"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// routeGroup is n routes' writes as the group commit gets them (a result,
// its audit record and its ledger entry each), the first with sequence
// first.
func routeGroup(s *Store, first int64, n int) []writebehind.Write {
	var ws []writebehind.Write
	for i := first; i < first+int64(n); i++ {
		id, _ := toolrouter.ToolCallID("ckpt", i)
		res, rec := storebench.Route(id, i)
		e := storebench.Settled(res, rec)
		rec.Spend = &e
		body, _ := res.Encoded()
		ws = append(ws, writebehind.Write{SQL: saveResultSQL, Row: true, Key: id,
			Args: []any{id, res.PlanID, string(body), sqliteTimeOf(s.Now())}})
		ws = appendAuditWrites(ws, []toolrouter.AuditRecord{rec})
	}
	return ws
}

// Without any pass of the checkpointer (one that cannot keep up), the
// group commit alone keeps the log within its limit (walLimit pages) and
// one commit's,
// and checkpoints in its own path only at that bound: the log file does
// not grow without limit, and no commit below it copies anything.
func TestWALBoundWithoutCheckpointer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bound.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.stopCheckpointer()
	wc, err := s.writerConn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var auto int
	if err := wc.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("group commit's wal_autocheckpoint = %d, %v; want 0 (it checkpoints by its own count)", auto, err)
	}
	// A lower bound than walLimit, so that the log reaches it three
	// times in a few dozen commits; the group commit's rule is the same.
	const limit, size = 500, 16
	s.wal.limit = limit
	var most, perCommit int64
	var prev int64
	for seq := int64(0); s.ckpt.catchUps.Load() < 3; seq += size {
		ups := s.ckpt.catchUps.Load()
		if err := s.commit(ctx, routeGroup(s, seq, size)); err != nil {
			t.Fatal(err)
		}
		n := walFrames(t, path)
		most = max(most, n)
		if n > prev && s.ckpt.catchUps.Load() == ups {
			perCommit = max(perCommit, n-prev)
		}
		prev = n
		if seq > 100*limit {
			t.Fatalf("no catch-up after %d routes: log at %d pages", seq, n)
		}
	}
	if most > limit+perCommit {
		t.Errorf("log held %d pages; want at most %d + %d (one commit's)", most, limit, perCommit)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if bytes := (limit + perCommit) * (4096 + 24); fi.Size() > bytes+32 {
		t.Errorf("log file %d bytes; want at most %d", fi.Size(), bytes+32)
	}
}

// The checkpointer copies the log beside the commits: after each of its
// passes the next commit starts the log again, so the group commit never
// checkpoints in its own path, and the log stays a few commits long.
func TestCheckpointerKeepsTheLogShort(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "short.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.stopCheckpointer()
	passed := make(chan struct{})
	if err := s.startCheckpointer(ctx, 0, passed); err != nil {
		t.Fatal(err)
	}
	const size, commits = 16, 40
	var most, first int64
	for i := range int64(commits) {
		if err := s.commit(ctx, routeGroup(s, i*size, size)); err != nil {
			t.Fatal(err)
		}
		n := walFrames(t, path)
		if i == 0 {
			first = n
		}
		most = max(most, n)
		select {
		case <-passed:
		case <-time.After(10 * time.Second):
			t.Fatal("no pass of the checkpointer after a commit")
		}
	}
	if s.ckpt.catchUps.Load() != 0 {
		t.Errorf("the group commit checkpointed %d times in its own path; want 0", s.ckpt.catchUps.Load())
	}
	if most > 2*first {
		t.Errorf("log held %d pages, the first commit wrote %d: it did not start again after the passes", most, first)
	}
	if s.wal.pages > 2*first {
		t.Errorf("group commit counts %d pages in the log; want it to start again after each pass", s.wal.pages)
	}
	if e := s.ckpt.err.Load(); e != nil {
		t.Errorf("checkpoint error: %v", *e)
	}
}
