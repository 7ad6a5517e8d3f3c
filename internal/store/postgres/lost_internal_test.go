package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestFailedGroupCommitReportedAndPingProbes (issue 21 item 7): while the
// group commit fails (here a trigger refuses the rows, as a full disk
// would), the lost results and audit records are reported by kind and Ping
// fails; once commits succeed again Ping succeeds by itself, through its
// probe write.
func TestFailedGroupCommitReportedAndPingProbes(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	lost := map[string]int{}
	p.OnLostWrites(func(err error, l map[string]int) {
		mu.Lock()
		defer mu.Unlock()
		for k, n := range l {
			lost[k] += n
		}
	})
	if err := p.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.pool.Exec(ctx, `CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END $$`); err != nil {
		t.Fatal(err)
	}
	tables := []string{"route_results", "audit", "write_probe"}
	for _, tb := range tables {
		if _, err := p.pool.Exec(ctx, `CREATE TRIGGER full_`+tb+` BEFORE INSERT ON `+tb+` FOR EACH ROW EXECUTE FUNCTION full_disk()`); err != nil {
			t.Fatal(err)
		}
	}
	res := &toolrouter.Result{ToolCallID: "tc_000000000000000000000001", PlanID: "p", ToolName: "t", Success: true}
	rec := toolrouter.AuditRecord{Time: time.Now(), EntryPoint: toolrouter.EntryRoute, PlanID: "p", ToolCallID: res.ToolCallID, Outcome: toolrouter.AuditSuccess}
	if err := p.SaveResult(ctx, res, rec, rec); err != nil {
		t.Fatal(err)
	}
	_ = p.Flush(ctx) // after it, the commit that held them has been reported
	mu.Lock()
	if lost["result"] != 1 || lost["audit"] != 2 {
		t.Errorf("lost %v, want 1 result and 2 audit records", lost)
	}
	mu.Unlock()
	if err := p.Ping(ctx); err == nil {
		t.Fatal("Ping succeeds while commits fail")
	}
	for _, tb := range tables {
		if _, err := p.pool.Exec(ctx, `DROP TRIGGER full_`+tb+` ON `+tb); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Ping once commits succeed again: %v", err)
	}
	if p.w.Err() != nil {
		t.Errorf("the writer still reports %v", p.w.Err())
	}
}
