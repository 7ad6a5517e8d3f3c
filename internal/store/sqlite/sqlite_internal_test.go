package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestMigrationsAreRecorded checks schema_migrations lists every embedded
// version once.
func TestMigrationsAreRecorded(t *testing.T) {
	ctx := context.Background()
	ms := sqlstore.Migrations(migrationFiles, "migrations")
	want, last := len(ms), ms[len(ms)-1].Version
	s, err := Open(ctx, t.TempDir()+"/m.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n, max int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil || n != want || max != last {
		t.Errorf("sqlite schema_migrations: %d rows, max %d, %v; want %d, max %d", n, max, err, want, last)
	}
}

// A store that stops without Close (a crash) leaves its block reserved:
// the next process skips ahead, never repeating a sequence it handed out.
func TestCrashSkipsAheadNeverRepeats(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if n, err := s.NextSequence(ctx, "p"); err != nil || n != int64(i) {
			t.Fatalf("%d: %d %v", i, n, err)
		}
	}
	s.db.Close() // no Close: no give-back, as after kill -9
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n, err := s2.NextSequence(ctx, "p"); err != nil || n != seqBlock {
		t.Errorf("after a crash: %d, %v; want %d (the reserved block skipped)", n, err, seqBlock)
	}
}

// A route's result and its audit record are one write of the group
// commit: a commit that fails (a crash under the writer) loses both or
// neither, even when each commit takes a single write.
func TestFailedCommitLosesResultAndAuditTogether(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "crash.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.w.Close()
	commits := 0
	s.w = writebehind.New(func(ctx context.Context, ws []writebehind.Write) error {
		commits++
		if commits%2 == 0 {
			return errors.New("crash")
		}
		return s.commit(ctx, ws)
	}, 100, 1)
	for i := range 10 {
		seq := int64(i)
		id := fmt.Sprintf("tc_%d", i)
		res := &toolrouter.Result{ToolCallID: id, PlanID: "p", Sequence: seq, ToolName: "t", Success: true}
		rec := toolrouter.AuditRecord{Time: time.Now(), EntryPoint: toolrouter.EntryRoute, PlanID: "p", Sequence: &seq,
			ToolCallID: id, ToolName: "t", Tool: "t", Outcome: toolrouter.AuditSuccess}
		if err := s.SaveResult(ctx, res, rec); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.w.Flush(ctx) // its own commit: the error of an even one, or none
	var results, audits, alone int
	if err := s.db.QueryRow(`SELECT
		(SELECT count(*) FROM route_results),
		(SELECT count(*) FROM audit),
		(SELECT count(*) FROM route_results r WHERE NOT EXISTS (SELECT 1 FROM audit a WHERE a.tool_call_id = r.tool_call_id))
		+ (SELECT count(*) FROM audit a WHERE NOT EXISTS (SELECT 1 FROM route_results r WHERE r.tool_call_id = a.tool_call_id))`).
		Scan(&results, &audits, &alone); err != nil {
		t.Fatal(err)
	}
	if results != 5 || audits != 5 || alone != 0 {
		t.Fatalf("%d results, %d audit records, %d without the other; want 5, 5 (every other commit lost), 0", results, audits, alone)
	}
}

// One group commit of many results and audit records inserts them in
// multi-row statements of every chunk size; a result saved twice in the
// group keeps its last body.
func TestGroupCommitMultiRow(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "multi.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 64 + 16 + 4 + 3
	var ws []writebehind.Write
	for i := range n {
		seq := int64(i)
		id := fmt.Sprintf("tc_%d", i)
		ws = append(ws, writebehind.Write{SQL: saveResultSQL, Row: true, Key: id, Args: []any{id, "p", `{"first":true}`, sqliteTimeOf(time.Now())}})
		ws = append(ws, auditWrites([]toolrouter.AuditRecord{{Time: time.Now(), EntryPoint: toolrouter.EntryRoute, PlanID: "p",
			Sequence: &seq, ToolCallID: id, ToolName: "t", Tool: "t", Outcome: toolrouter.AuditSuccess}})...)
	}
	ws = append(ws, writebehind.Write{SQL: saveResultSQL, Row: true, Key: "tc_7", Args: []any{"tc_7", "p", `{"tool_call_id":"tc_7"}`, sqliteTimeOf(time.Now())}})
	if err := s.commit(ctx, ws); err != nil {
		t.Fatal(err)
	}
	var results, audits int
	if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM route_results), (SELECT count(*) FROM audit)`).Scan(&results, &audits); err != nil {
		t.Fatal(err)
	}
	if results != n || audits != n {
		t.Errorf("%d results, %d audit records; want %d of each", results, audits, n)
	}
	if res, err := s.GetResult(ctx, "tc_7"); err != nil || res.ToolCallID != "tc_7" {
		t.Errorf("tc_7 saved twice: %+v, %v; want the last body", res, err)
	}
}

// The group commit runs with synchronous=NORMAL (no fsync), but a group
// holding a Durable write (an Idempotency-Key's answer) with FULL, and
// every other connection stays FULL (sequence blocks, runs, approvals).
func TestGroupCommitSynchronous(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "sync.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// plan_sequences.next records the synchronous level each write ran
	// with (1 NORMAL, 2 FULL).
	write := func(plan string) writebehind.Write {
		return writebehind.Write{SQL: `INSERT INTO plan_sequences (plan_id, next) SELECT ?, synchronous FROM pragma_synchronous`,
			Args: []any{plan}}
	}
	if err := s.w.Add(ctx, write("lazy")); err != nil {
		t.Fatal(err)
	}
	if err := s.w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := write("durable")
	d.Durable = true
	if err := s.w.AddWait(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := s.w.AddWait(ctx, write("after")); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	rows, err := s.db.QueryContext(ctx, `SELECT plan_id, next FROM plan_sequences`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var n int
		if err := rows.Scan(&p, &n); err != nil {
			t.Fatal(err)
		}
		got[p] = n
	}
	if want := map[string]int{"lazy": 1, "durable": 2, "after": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("synchronous per group commit %v, want %v", got, want)
	}
	var level int
	if err := s.db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level); err != nil || level != 2 {
		t.Errorf("pool connection synchronous = %d, %v; want 2 (FULL)", level, err)
	}
}

// PurgeAudit looks at the limit oldest records only (no index on at):
// of those, it deletes the expired ones, skipping one that is not.
func TestPurgeAuditOldestIDs(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "purge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	var recs []toolrouter.AuditRecord
	for _, h := range []int{1, 9, 2, 3, 4} { // the second record is newer
		recs = append(recs, toolrouter.AuditRecord{Time: base.Add(time.Duration(h) * time.Hour), ToolCallID: fmt.Sprint("tc_", h)})
	}
	if err := s.AppendAudit(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	left := func() []string {
		got, err := s.ListAudit(ctx, toolrouter.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ToolCallID)
		}
		return ids
	}
	cut := base.Add(5 * time.Hour)
	if n, err := s.PurgeAudit(ctx, cut, 3); err != nil || n != 2 {
		t.Fatalf("purge of the 3 oldest: %d, %v; want 2", n, err)
	}
	if got := fmt.Sprint(left()); got != "[tc_9 tc_4 tc_3]" { // newest first by time
		t.Fatalf("after the first purge: %s", got)
	}
	if n, err := s.PurgeAudit(ctx, cut, 3); err != nil || n != 2 {
		t.Fatalf("second purge: %d, %v; want 2", n, err)
	}
	if got := fmt.Sprint(left()); got != "[tc_9]" {
		t.Fatalf("after the second purge: %s", got)
	}
}

// A database at the schema of version 40 (before the route_results
// changes of issue 10), holding results and audit records, keeps them
// through the later migrations: results are read back and swept by age,
// audit records listed newest first, and new ids continue after the old.
func TestUpgradeKeepsResultsAndAudit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v40.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)`)
	for _, m := range sqlstore.Migrations(migrationFiles, "migrations") {
		if m.Version <= 40 {
			exec(m.SQL)
			exec(`INSERT INTO schema_migrations (version) VALUES (?)`, m.Version)
		}
	}
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"tc_a", "tc_b", "tc_c"} {
		at := sqliteTimeOf(base.Add(time.Duration(i) * time.Hour))
		exec(`INSERT INTO route_results (tool_call_id, plan_id, body, created_at) VALUES (?, 'p', ?, ?)`,
			id, `{"tool_call_id":"`+id+`","plan_id":"p"}`, at)
		// The columns of version 40 (guardrails came with 60).
		exec(`INSERT INTO audit (at, client, entry_point, plan_id, sequence, tool_call_id, tool_name, tool, args_sha256, outcome, error_category, duration_ms, replica) VALUES (?, 'c', 'route', 'p', ?, ?, 't', 't', '', 'success', '', 1, '')`,
			at, i, id)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"tc_a", "tc_b", "tc_c"} {
		if res, err := s.GetResult(ctx, id); err != nil || res.ToolCallID != id {
			t.Errorf("GetResult(%s) after the upgrade = %+v, %v", id, res, err)
		}
	}
	if n, err := s.DeleteResultsBefore(ctx, base.Add(90*time.Minute), 10); err != nil || n != 2 {
		t.Errorf("DeleteResultsBefore after the upgrade = %d, %v; want 2", n, err)
	}
	if _, err := s.GetResult(ctx, "tc_c"); err != nil {
		t.Errorf("the newest result was deleted: %v", err)
	}
	if err := s.AppendAudit(ctx, []toolrouter.AuditRecord{{Time: base.Add(3 * time.Hour), Client: "c", ToolCallID: "tc_d"}}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ListAudit(ctx, toolrouter.AuditFilter{Client: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprint(r.ID, r.ToolCallID))
	}
	if fmt.Sprint(got) != "[4tc_d 3tc_c 2tc_b 1tc_a]" {
		t.Errorf("audit after the upgrade: %v; want [4tc_d 3tc_c 2tc_b 1tc_a]", got)
	}
}

// A group commit whose statement fails writes nothing of the group, and
// leaves the writer's connection as it was: the next group commits, with
// synchronous=NORMAL again after a Durable one.
func TestFailedStatementRollsBackGroup(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "fail.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	group := func(id string, bad bool) []writebehind.Write {
		seq := int64(1)
		ws := []writebehind.Write{{SQL: saveResultSQL, Row: true, Key: id, Args: []any{id, "p", `{}`, sqliteTimeOf(time.Now())}}}
		ws = append(ws, auditWrites([]toolrouter.AuditRecord{{Time: time.Now(), Sequence: &seq, ToolCallID: id}})...)
		next := any(`synchronous`)
		if bad {
			next = nil // plan_sequences.next is NOT NULL
		}
		return append(ws, writebehind.Write{Durable: bad,
			SQL:  `INSERT INTO plan_sequences (plan_id, next) SELECT ?, CASE WHEN ? IS NULL THEN NULL ELSE synchronous END FROM pragma_synchronous`,
			Args: []any{id, next}})
	}
	if err := s.commit(ctx, group("tc_bad", true)); err == nil {
		t.Fatal("a NULL in a NOT NULL column committed")
	}
	if err := s.commit(ctx, group("tc_good", false)); err != nil {
		t.Fatalf("the commit after a failed one: %v", err)
	}
	var ids string
	var level int
	if err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT group_concat(tool_call_id) FROM route_results) || '/' || (SELECT group_concat(tool_call_id) FROM audit),
		(SELECT next FROM plan_sequences WHERE plan_id = 'tc_good')`).Scan(&ids, &level); err != nil {
		t.Fatal(err)
	}
	if ids != "tc_good/tc_good" || level != 1 {
		t.Errorf("after a failed group and a good one: results/audit %q, synchronous %d; want tc_good/tc_good, 1 (NORMAL)", ids, level)
	}
}

// reserved is the plan's next unreserved sequence in the file.
func reserved(t *testing.T, s *Store, plan string) int64 {
	t.Helper()
	var next int64
	if err := s.db.QueryRow(`SELECT next FROM plan_sequences WHERE plan_id = ?`, plan).Scan(&next); err != nil {
		t.Fatal(err)
	}
	return next
}

// Once a block is half used the next one is reserved ahead, so that routes
// keep taking sequences from memory instead of waiting for a durable
// commit when the block runs out; sequences stay dense, and a clean Close
// gives back what was reserved ahead.
func TestSequencesReservedAhead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ahead.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	take := func(s *Store, want int64) {
		t.Helper()
		if n, err := s.NextSequence(ctx, "p"); err != nil || n != want {
			t.Fatalf("sequence %d, %v; want %d", n, err, want)
		}
	}
	var i int64
	for ; i <= seqBlock/2; i++ {
		take(s, i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for reserved(t, s, "p") != 2*seqBlock {
		if time.Now().After(deadline) {
			t.Fatalf("reserved up to %d after %d sequences; want %d (the next block, ahead)", reserved(t, s, "p"), i, 2*seqBlock)
		}
		time.Sleep(time.Millisecond) // polling the background reservation, not synchronising
	}
	for ; i < 3*seqBlock; i++ { // across two block boundaries
		take(s, i)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	take(s2, i) // what was reserved ahead was given back
}

// Concurrent routes of one plan get every sequence once, across blocks
// reserved ahead while they run.
func TestSequencesConcurrentAcrossBlocks(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "conc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const workers, each = 8, seqBlock / 2
	got := make([][]int64, workers)
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for range each {
				n, err := s.NextSequence(ctx, "p")
				if err != nil {
					errs <- err
					return
				}
				got[w] = append(got[w], n)
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	seen := make([]bool, workers*each)
	for _, ns := range got {
		for _, n := range ns {
			if n < 0 || n >= int64(len(seen)) || seen[n] {
				t.Fatalf("sequence %d repeated or out of [0, %d)", n, len(seen))
			}
			seen[n] = true
		}
	}
}

// Switching a file to WAL while another connection holds its write lock
// fails at once with SQLITE_BUSY, busy_timeout or not (the switch
// upgrades a read transaction, and SQLite's busy handler is not called
// for an upgrade): concurrent openers of a new file failed that way. wal
// tries again after the lock is released, and succeeds.
func TestWALSwitchRetriesWhileAnotherConnectionWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wal.db")
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_txlock=immediate"
	holder, err := sql.Open("sqlite", dsn) // rollback journal: the file's default
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	opener, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer opener.Close()
	waits := 0
	err = wal(ctx, opener, path, func(context.Context, time.Duration) error {
		waits++
		if waits == 1 {
			return tx.Commit() // the first try failed: release the lock
		}
		return nil
	})
	if err != nil || waits != 1 {
		t.Fatalf("wal: %v after %d waits; want nil after 1 (the try while the lock was held)", err, waits)
	}
	var mode string
	if err := opener.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v; want wal", mode, err)
	}
	var n int
	if err := opener.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Errorf("holder's row: %d, %v; want 1", n, err)
	}
}

// A switch to WAL that keeps failing ends with the SQLITE_BUSY error once
// the context is done, not after busyTimeout.
func TestWALSwitchGivesUpWhenContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "wal.db")
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_txlock=immediate"
	holder, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	opener, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer opener.Close()
	err = wal(ctx, opener, path, func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleep(ctx, d)
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "SQLITE_BUSY") {
		t.Errorf("wal: %v; want SQLITE_BUSY and context canceled", err)
	}
}
