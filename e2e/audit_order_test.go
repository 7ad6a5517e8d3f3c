package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// TestAuditListedByStartTime (issue 21 item 9): a slow call that started
// first and a fast one that started while it ran; GET /audit lists them
// newest first by the time it shows (the start), with when each finished,
// and its cursor pages through them.
func TestAuditListedByStartTime(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer tool.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	rt, _ := startRouter(t, fmt.Sprintf("tools:\n  - {name: slow, endpoint: %[1]s/slow}\n  - {name: fast, endpoint: %[1]s/fast}\n", tool.URL),
		"TOOLROUTER_STORE=sqlite://"+filepath.Join(t.TempDir(), "audit.db"))
	route := func(name string) response {
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": name, "arguments": "{}"}})
	}
	slowDone := make(chan response, 1)
	go func() { slowDone <- route("slow") }()
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatal("the slow call did not reach its tool")
	}
	if r := route("fast"); r.Status != 200 {
		t.Fatalf("fast: %d %s", r.Status, r.Body)
	}
	close(release)
	if r := <-slowDone; r.Status != 200 {
		t.Fatalf("slow: %d %s", r.Status, r.Body)
	}
	type record struct {
		ID         int64     `json:"id"`
		Time       time.Time `json:"time"`
		FinishedAt time.Time `json:"finished_at"`
		Tool       string    `json:"tool"`
		DurationMS float64   `json:"duration_ms"`
	}
	var page struct {
		Records    []record `json:"records"`
		NextCursor *string  `json:"next_cursor"`
	}
	decode := func(r response) {
		t.Helper()
		page.Records, page.NextCursor = nil, nil
		if r.Status != 200 {
			t.Fatalf("GET /audit: %d %s", r.Status, r.Body)
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
	}
	decode(do(t, "GET", rt.URL()+"/audit", nil))
	if len(page.Records) != 2 || page.Records[0].Tool != "fast" || page.Records[1].Tool != "slow" {
		t.Fatalf("newest first by start: %+v", page.Records)
	}
	fast, slow := page.Records[0], page.Records[1]
	if !slow.Time.Before(fast.Time) || !slow.FinishedAt.After(fast.FinishedAt) {
		t.Errorf("slow %+v should start before and finish after fast %+v", slow, fast)
	}
	for _, r := range page.Records {
		want := r.Time.Add(time.Duration(r.DurationMS * float64(time.Millisecond)))
		if d := r.FinishedAt.Sub(want); d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%s: finished_at %v, want time + duration %v", r.Tool, r.FinishedAt, want)
		}
	}
	decode(do(t, "GET", rt.URL()+"/audit?limit=1", nil))
	if len(page.Records) != 1 || page.Records[0].Tool != "fast" || page.NextCursor == nil {
		t.Fatalf("first page of one: %+v %v", page.Records, page.NextCursor)
	}
	decode(do(t, "GET", rt.URL()+"/audit?limit=1&cursor="+*page.NextCursor, nil))
	if len(page.Records) != 1 || page.Records[0].Tool != "slow" {
		t.Fatalf("second page of one: %+v", page.Records)
	}
	if r := do(t, "GET", rt.URL()+"/audit?cursor=12", nil); r.Status != 400 {
		t.Errorf("a cursor that is no cursor: %d %s", r.Status, r.Body)
	}
}
