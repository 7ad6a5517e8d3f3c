package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
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
	if c, err := s.Costs(ctx, []toolrouter.SpendKey{later.Key()}); err != nil || c[later.ID].Amount != 3000 {
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

// TestSpendLedgerByTime: the ledger is keyed by (at_us, id) in a table
// without rowid (migration 0130, issue 37), so that a group commit appends
// its calls' entries instead of inserting each at its hashed id's place,
// and every query of the ledger still finds its rows by an index, never by
// a scan of the table: GET /audit's costs and a reservation's drop by the
// key, GET /usage and the retention sweep by its time, a virtual server's
// limit by spend_vserver_at, which holds only virtual servers' entries.
func TestSpendLedgerByTime(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "spend.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ddl string
	if err := s.db.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'spend'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ddl, "PRIMARY KEY (at_us, id)") || !strings.HasSuffix(ddl, "WITHOUT ROWID") {
		t.Errorf("spend is %s; want keyed by (at_us, id), without rowid", ddl)
	}
	at := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	check := toolrouter.SpendCounter{Scope: toolrouter.ScopeVirtualServer, Name: "research", Currency: "USD", Start: at}
	spent, spentArgs := sqlstore.SpentSQL(check, sqlitePH)
	check.Scope, check.Name = toolrouter.ScopeClient, "alice"
	spentClient, spentClientArgs := sqlstore.SpentSQL(check, sqlitePH)
	costs, costsArgs := sqlstore.SpendByKeys([]toolrouter.SpendKey{{ID: "tc_1", At: at}, {ID: "tc_2", At: at}}, sqlitePH)
	usage, usageArgs, err := sqlstore.UsageSelect(toolrouter.UsageFilter{GroupBy: "tool", From: at, To: at.Add(time.Hour)}, sqlitePH)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		name, sql string
		args      []any
		want      string // in the plan
	}{
		{"virtual server limit", spent, spentArgs, "USING INDEX spend_vserver_at"},
		{"client limit", spentClient, spentClientArgs, "USING INDEX spend_client_at"},
		{"costs", costs, costsArgs, "USING PRIMARY KEY (at_us=? AND id=?)"},
		{"usage", usage, usageArgs, "USING PRIMARY KEY (at_us>? AND at_us<?)"},
		{"drop", `DELETE FROM spend WHERE at_us = ? AND id = ?`, []any{1, "x"}, "USING PRIMARY KEY (at_us=? AND id=?)"},
		{"purge", `DELETE FROM spend WHERE (at_us, id) IN (SELECT at_us, id FROM spend WHERE at_us < ? ORDER BY at_us LIMIT ?)`, []any{1, 10}, "USING PRIMARY KEY (at_us<?)"},
	} {
		plan := explain(t, s, q.sql, q.args...)
		if !strings.Contains(plan, q.want) || strings.Contains(plan, "SCAN spend") && !strings.Contains(plan, "SCAN spend USING") {
			t.Errorf("%s: plan\n%s\nwant %q and no scan of the table", q.name, plan, q.want)
		}
	}
	// The partial index holds virtual servers' entries only.
	for i, vs := range []string{"", "research", ""} {
		e := toolrouter.SpendEntry{ID: fmt.Sprintf("tc_%d", i), At: at.Add(time.Duration(i) * time.Second), Client: "alice", VirtualServer: vs, Currency: "USD", Amount: 10}
		if err := s.SettleSpend(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM spend INDEXED BY spend_vserver_at WHERE virtual_server <> ''`).Scan(&n); err != nil || n != 1 {
		t.Errorf("spend_vserver_at holds %d entries (%v), want 1", n, err)
	}
	if err := s.db.QueryRowContext(ctx, spent, spentArgs...).Scan(&n); err != nil || n != 10 {
		t.Errorf("research spent %d (%v), want 10", n, err)
	}
}

// explain is SQLite's query plan of q, one step a line.
func explain(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSpendMigrationKeepsEntries: migration 0130 rebuilds the ledger
// keyed by time with every entry of a file written before it.
func TestSpendMigrationKeepsEntries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range sqlstore.Migrations(migrationFiles, "migrations") {
		if m.Version >= 130 {
			break
		}
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, m.Version); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	old := toolrouter.SpendEntry{ID: "alice\x1ftc_old", At: at, Client: "alice", VirtualServer: "research", Tool: "search", Currency: "USD", Amount: 2000}
	if _, err := db.ExecContext(ctx, `INSERT INTO spend (`+sqlstore.SpendColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, sqlstore.SpendValues(old)...); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	costs, err := s.Costs(ctx, []toolrouter.SpendKey{old.Key()})
	if c, ok := costs[old.ID]; err != nil || !ok || c.Amount != 2000 || c.Currency != "USD" {
		t.Errorf("the entry written before the migration: %+v %v", costs, err)
	}
	rows, err := s.Usage(ctx, toolrouter.UsageFilter{GroupBy: "virtual_server", From: at, To: at.Add(time.Second)})
	if err != nil || len(rows) != 1 || rows[0].Key != "research" || rows[0].Amount != 2000 {
		t.Errorf("usage after the migration: %+v %v", rows, err)
	}
}
