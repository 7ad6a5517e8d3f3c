package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/store/sqlite"
)

// TestRunCancelAndActiveLimitAcrossReplicas: two replicas share a SQLite
// store; a client over TOOLROUTER_MAX_ACTIVE_RUNS gets 429 with
// Retry-After, and POST /runs/{id}/cancel sent to the other replica ends
// the run as cancelled (issue 14 item 6).
func TestRunCancelAndActiveLimitAcrossReplicas(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	reg := runsRegistry(t, tools.addr, fake)
	db := "TOOLROUTER_STORE=sqlite://" + filepath.Join(t.TempDir(), "toolrouter.db")
	a, _ := startRouter(t, reg, db, "TOOLROUTER_MAX_ACTIVE_RUNS=1", "TOOLROUTER_RUN_HEARTBEAT=200ms")
	b, _ := startRouter(t, reg, db, "TOOLROUTER_RUN_HEARTBEAT=200ms")
	slow := map[string]any{"tool_calls": []any{toolCall("test/slow", map[string]any{"ms": 60000})}}
	fake.script(t, slow, slow, slow, slow, slow, slow, slow, slow, map[string]any{"text": "never"}) // about 16 s of tool calls

	body := map[string]any{"prompt": "slow", "context": map[string]any{"plan_id": "plan-cancel"}}
	started := do(t, "POST", a.URL()+"/runs", body, "Prefer", "respond-async")
	if started.Status != 202 {
		t.Fatalf("POST /runs: %d %s", started.Status, started.Body)
	}
	id := decodeRun(t, started).RunID

	over := do(t, "POST", a.URL()+"/runs", body, "Prefer", "respond-async")
	if over.Status != 429 || over.Header.Get("Retry-After") == "" || !strings.Contains(string(over.Body), "TOOLROUTER_MAX_ACTIVE_RUNS") {
		t.Fatalf("second run on a full replica: %d %v %s", over.Status, over.Header, over.Body)
	}

	// Wait until the run is in its slow tool call, then cancel it elsewhere.
	waitRun(t, b, id, func(r runResult) bool { return r.Status == "running" && len(fake.requests(t)) >= 1 })
	c := do(t, "POST", b.URL()+"/runs/"+id+"/cancel", nil)
	if c.Status != 202 || decodeRun(t, c).Status != "running" || c.Header.Get("Location") != "/runs/"+id {
		t.Fatalf("cancel: %d %v %s", c.Status, c.Header, c.Body)
	}
	run := waitRun(t, b, id, func(r runResult) bool { return r.Status != "running" })
	if run.Status != "cancelled" || run.Error == nil || !strings.Contains(*run.Error, "cancel") {
		t.Fatalf("run ended %s (%v), want cancelled", run.Status, run.Error)
	}
	if again := do(t, "POST", a.URL()+"/runs/"+id+"/cancel", nil); again.Status != 200 || decodeRun(t, again).Status != "cancelled" {
		t.Fatalf("cancel of a finished run: %d %s", again.Status, again.Body)
	}
	if nf := do(t, "POST", a.URL()+"/runs/run_nope/cancel", nil); nf.Status != 404 {
		t.Fatalf("cancel of an unknown run: %d %s", nf.Status, nf.Body)
	}
	// The slot is free again.
	fake.script(t, map[string]any{"text": "done"})
	if r := do(t, "POST", a.URL()+"/runs", body); r.Status != 200 || decodeRun(t, r).Status != "completed" {
		t.Fatalf("run after the cancel: %d %s", r.Status, r.Body)
	}
}

// waitRun polls GET /runs/{id} until ok, with a deadline.
func waitRun(t *testing.T, p *proc, id string, ok func(runResult) bool, header ...string) runResult {
	t.Helper()
	var r runResult
	poll.Until(t, 15*time.Second, func() error {
		if r = decodeRun(t, do(t, "GET", p.URL()+"/runs/"+id, nil, header...)); !ok(r) {
			return fmt.Errorf("run %s: condition not reached: %+v", id, r)
		}
		return nil
	})
	return r
}

// TestRetentionSweepDoesNotStallRoutes: a store holding many expired route
// results is swept in small batches at start; a route sent while the
// sweep is under way (some expired rows gone, some still there) completes
// meanwhile, and the sweep then removes them all (issue 14 item 7).
func TestRetentionSweepDoesNotStallRoutes(t *testing.T) {
	const expired = 20000
	path := filepath.Join(t.TempDir(), "toolrouter.db")
	s, err := sqlite.Open(context.Background(), path) // the schema
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z")
	body := `{"output":"` + strings.Repeat("x", 2000) + `"}`
	for i := range expired {
		if _, err := tx.Exec(`INSERT INTO route_results (tool_call_id, plan_id, body, created_at) VALUES (?, 'old', ?, ?)`,
			fmt.Sprintf("tc_old_%06d", i), body, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM route_results WHERE plan_id = 'old'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr), "TOOLROUTER_STORE=sqlite://"+path, "TOOLROUTER_RESULT_RETENTION=24h")
	poll.Until(t, 20*time.Second, func() error { // the sweep has begun
		if count() == expired {
			return errors.New("the sweep did not start")
		}
		return nil
	})
	r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "during-sweep", "tool_call": map[string]any{"name": "test/echo", "arguments": map[string]any{"msg": "hi"}}})
	if r.Status != 200 || r.JSON(t)["success"] != true {
		t.Fatalf("route during the sweep: %d %s", r.Status, r.Body)
	}
	if left := count(); left == 0 {
		t.Fatalf("the sweep finished before the route did: the route waited for it")
	}
	// 40 batches with a pause after each: seconds on an idle machine, much
	// longer on a loaded one (each batch is a durable delete).
	poll.Until(t, 2*time.Minute, func() error {
		if n := count(); n > 0 {
			return fmt.Errorf("sweep incomplete: %d expired results left", n)
		}
		return nil
	})
	// The fresh result stays.
	var fresh int
	db.QueryRow(`SELECT count(*) FROM route_results WHERE plan_id = 'during-sweep'`).Scan(&fresh)
	if fresh != 1 {
		t.Fatalf("%d fresh results, want 1", fresh)
	}
}

// TestStartsWhilePostgreSQLIsDown: toolrouterd started while its
// PostgreSQL is unreachable listens, answers /readyz 503 and requests
// that need the store 503 with Retry-After, retries in the background,
// and serves routes once the database is reachable (issue 14 item 10).
func TestStartsWhilePostgreSQLIsDown(t *testing.T) {
	db := pgtest.Start(t)
	upstream := strings.TrimPrefix(db, "postgres://")
	upstream = upstream[strings.Index(upstream, "@")+1:]
	upstream = upstream[:strings.IndexAny(upstream, "/?")]
	px := newProxy(t, upstream)
	px.cut() // down before the service starts
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr), "TOOLROUTER_STORE="+strings.Replace(db, upstream, px.addr, 1))
	ready := func() int { return do(t, "GET", rt.URL()+"/readyz", nil).Status }
	if s := ready(); s != 503 {
		t.Fatalf("readyz %d with the database down at start, want 503", s)
	}
	route := func() response {
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p-down", "tool_call": map[string]any{"name": "test/echo", "arguments": map[string]any{"msg": "hi"}}})
	}
	if r := route(); r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("route with the store down at start: %d %v %s", r.Status, r.Header, r.Body)
	}
	rt.waitOutput(t, "a retry log line", contains("retrying with backoff"))
	px.restore()
	waitStatus(t, ready, 200)
	if r := route(); r.Status != 200 || r.JSON(t)["success"] != true {
		t.Fatalf("route once the database is up: %d %s", r.Status, r.Body)
	}
}
