package e2e_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFailedGroupCommitIsLoudAndRecovers (issue 21 item 7): while the
// SQLite group commit fails (a full disk, here triggers that make every
// insert of results, audit records and the readiness probe fail — a real
// SQLite error that needs no root-only trick), the lost records are
// logged, counted by kind, /readyz says the store is not ok and
// toolrouter_store_up is 0; once commits succeed again both come back by
// themselves, without traffic.
func TestFailedGroupCommitIsLoudAndRecovers(t *testing.T) {
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer tool.Close()
	path := filepath.Join(t.TempDir(), "full.db")
	rt, _ := startRouter(t, fmt.Sprintf("tools:\n  - {name: echo, endpoint: %s}\n", tool.URL), "TOOLROUTER_STORE=sqlite://"+path)
	if r := do(t, "GET", rt.URL()+"/readyz", nil); r.Status != 200 {
		t.Fatalf("readyz before: %d %s", r.Status, r.Body)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := []string{"route_results", "audit", "write_probe"}
	for _, tb := range tables {
		if _, err := db.Exec(`CREATE TRIGGER full_` + tb + ` BEFORE INSERT ON ` + tb + ` BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END`); err != nil {
			t.Fatal(err)
		}
	}
	const calls = 20
	for i := range calls {
		r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": "echo", "arguments": fmt.Sprintf(`{"i":%d}`, i)}})
		if r.Status != 200 {
			t.Fatalf("route %d: %d %s", i, r.Status, r.Body)
		}
	}
	rt.waitOutput(t, "a log line of the failed commit", contains("store group commit failed"))
	if !strings.Contains(rt.Output(), "database or disk is full") {
		t.Errorf("the log line does not say why")
	}
	deadline := time.Now().Add(20 * time.Second)
	for metric(t, rt, `toolrouter_store_lost_records_total{kind="audit"}`) < calls || metric(t, rt, `toolrouter_store_lost_records_total{kind="result"}`) < calls {
		if time.Now().After(deadline) {
			t.Fatalf("lost records not counted:\n%s", metricLines(t, rt, "toolrouter_store_lost"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := do(t, "GET", rt.URL()+"/readyz", nil); r.Status != 503 || !strings.Contains(string(r.Body), `"store":"unreachable"`) {
		t.Fatalf("readyz while commits fail: %d %s", r.Status, r.Body)
	}
	if up := metric(t, rt, "toolrouter_store_up"); up != 0 {
		t.Errorf("toolrouter_store_up %v while commits fail", up)
	}
	for _, tb := range tables {
		if _, err := db.Exec(`DROP TRIGGER full_` + tb); err != nil {
			t.Fatal(err)
		}
	}
	// Space is back: readiness recovers on its own (its probe commits).
	deadline = time.Now().Add(20 * time.Second)
	for {
		r := do(t, "GET", rt.URL()+"/readyz", nil)
		if r.Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz did not recover: %d %s", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if up := metric(t, rt, "toolrouter_store_up"); up != 1 {
		t.Errorf("toolrouter_store_up %v after recovery", up)
	}
	r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": "echo", "arguments": "{}"}})
	if r.Status != 200 {
		t.Fatalf("route after recovery: %d %s", r.Status, r.Body)
	}
	recs := do(t, "GET", rt.URL()+"/audit", nil).JSON(t)["records"].([]any)
	if len(recs) != 1 {
		t.Errorf("audit after recovery: %d records, want the one written since", len(recs))
	}
}

// metric is the value of the sample named exactly series in /metrics.
func metric(t *testing.T, p *proc, series string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(string(do(t, "GET", p.URL()+"/metrics", nil).Body))
	if m == nil {
		t.Fatalf("no %s in /metrics", series)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func metricLines(t *testing.T, p *proc, prefix string) string {
	var out []string
	for _, l := range strings.Split(string(do(t, "GET", p.URL()+"/metrics", nil).Body), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
