package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// recordCommits makes s's group commit record the kinds of the writes of
// each commit, and fail every commit while fail is set.
func recordCommits(s *Store) (kinds func() [][]string, fail func(bool)) {
	var mu sync.Mutex
	var got [][]string
	failing := false
	s.w.Close()
	s.w = writebehind.New(func(ctx context.Context, ws []writebehind.Write) error {
		var k []string
		for _, w := range ws {
			k = append(k, w.Kind)
		}
		mu.Lock()
		got = append(got, k)
		f := failing
		mu.Unlock()
		if f {
			return errors.New("crash")
		}
		return s.commit(ctx, ws)
	}, writeQueue, writeBatch)
	return func() [][]string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(got)
		}, func(f bool) {
			mu.Lock()
			failing = f
			mu.Unlock()
		}
}

// TestSpendCommitsWithItsResult: a call's settled ledger entry, carried
// by its audit record, is committed in the group commit with its result
// and record: no transaction of its own, no SettleSpend, and Usage sees it
// as soon as SaveResult returns (it flushes); it replaces the call's
// reservation; a commit that fails loses the three together, never the
// ledger entry of a call whose result was kept (nor the converse).
func TestSpendCommitsWithItsResult(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "spend.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kinds, fail := recordCommits(s)
	at := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	call := func(i int, amount toolrouter.Micros) (*toolrouter.Result, toolrouter.AuditRecord) {
		seq := int64(i)
		id := fmt.Sprintf("tc_%d", i)
		res := &toolrouter.Result{ToolCallID: id, Client: "alice", PlanID: "p", Sequence: seq, ToolName: "t", Success: true}
		rec := toolrouter.AuditRecord{Time: at, Client: "alice", EntryPoint: toolrouter.EntryRoute, PlanID: "p", Sequence: &seq,
			ToolCallID: id, ToolName: "t", Tool: "t", Outcome: toolrouter.AuditSuccess,
			Spend: &toolrouter.SpendEntry{ID: toolrouter.ScopedKey("alice", id), At: at, Client: "alice", Tool: "t", Currency: "USD", Amount: amount}}
		return res, rec
	}
	// Reserved at 0.5 USD (a limited call), settled at what it cost.
	res, rec := call(0, 2000)
	reserved := *rec.Spend
	reserved.Amount = 500_000
	if i, err := s.ReserveSpend(ctx, reserved, nil); err != nil || i != -1 {
		t.Fatal(i, err)
	}
	if err := s.SaveResult(ctx, res, rec); err != nil {
		t.Fatal(err)
	}
	month := toolrouter.UsageFilter{GroupBy: "client", From: at.AddDate(0, 0, -1), To: at.AddDate(0, 0, 1)}
	rows, err := s.Usage(ctx, month)
	if err != nil || len(rows) != 1 || rows[0].Amount != 2000 || rows[0].Calls != 1 {
		t.Fatalf("usage after SaveResult: %+v %v; want alice 0.002 in 1 call (the reservation replaced)", rows, err)
	}
	if got := kinds(); len(got) != 1 || !slices.Equal(got[0], []string{"result", "audit", "spend"}) {
		t.Errorf("commits %v; want one of the result, its audit record and its ledger entry", got)
	}
	// Settled twice in one group (a call stored again): its last entry.
	ws := appendAuditWrites(nil, []toolrouter.AuditRecord{rec})
	again := rec
	later := *rec.Spend
	later.Amount = 3000
	again.Spend = &later
	ws = appendAuditWrites(ws, []toolrouter.AuditRecord{again})
	if err := s.commit(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Costs(ctx, []string{later.ID}); err != nil || c[later.ID].Amount != 3000 {
		t.Errorf("settled twice in one group: %+v %v, want 0.003", c, err)
	}
	// A failed commit loses the result, the record and the entry together.
	fail(true)
	res1, rec1 := call(1, 7000)
	if err := s.SaveResult(ctx, res1, rec1); err != nil {
		t.Fatal(err)
	}
	_ = s.Flush(ctx) // after the failed commit (its error is that of the last commit, maybe the Flush's own)
	fail(false)
	res2, rec2 := call(2, 11000)
	if err := s.SaveResult(ctx, res2, rec2); err != nil {
		t.Fatal(err)
	}
	rows, err = s.Usage(ctx, month)
	if err != nil || len(rows) != 1 || rows[0].Amount != 3000+11000 || rows[0].Calls != 2 {
		t.Errorf("usage: %+v %v; want 0.014 in 2 calls (tc_1 lost with its result)", rows, err)
	}
	if _, err := s.GetResult(ctx, toolrouter.ScopedKey("alice", "tc_1")); toolrouter.ErrorCode(err) != toolrouter.ENOTFOUND {
		t.Errorf("tc_1's result: %v, want lost with its ledger entry", err)
	}
}
