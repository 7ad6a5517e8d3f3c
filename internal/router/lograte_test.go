package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// failingResults is a store whose saves all fail, as in an outage.
type failingResults struct{ n int }

func (f *failingResults) SaveResult(context.Context, *toolrouter.Result, ...toolrouter.AuditRecord) error {
	f.n++
	return errors.New("database is locked")
}

type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *manualClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestStoreFailuresAreRateLimitedInTheLog (issue 14 item 9): N failed saves
// write at most lograte.Burst "store route result" lines per period, and
// the next period's first line counts the ones suppressed.
func TestStoreFailuresAreRateLimitedInTheLog(t *testing.T) {
	t.Parallel()
	reg, err := registry.Parse("t.yaml", []byte(benchRegistry), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	clock := &manualClock{t: time.Unix(1e9, 0)}
	results := &failingResults{}
	rt := &rig{
		Tools:    func() pipeline.Tools { return reg },
		Exec:     remote.New(remote.Options{Transport: echoTransport{}}),
		Seq:      memory.New(),
		Results:  results,
		LogLimit: lograte.New(clock.now),
	}
	var buf bytes.Buffer
	ctx := zerolog.New(&buf).WithContext(context.Background())
	var payload any
	_ = json.Unmarshal([]byte(openAICall("call_1")), &payload)
	route := func(n int) {
		for range n {
			if res, err := rt.Route(ctx, "flood", payload, nil); err != nil || !res.Success {
				t.Fatalf("route: %v %+v", err, res)
			}
		}
	}
	lines := func() []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["message"] == "store route result" {
				out = append(out, m)
			}
		}
		return out
	}

	const n = 500
	route(n)
	if results.n != n {
		t.Fatalf("%d saves, want %d", results.n, n)
	}
	if got := lines(); len(got) != lograte.Burst || got[0]["level"] != "error" || got[0]["error"] != "database is locked" {
		t.Fatalf("%d failed saves wrote %d lines (want %d): %v", n, len(got), lograte.Burst, got[:min(len(got), 2)])
	}
	clock.add(lograte.Period)
	route(1)
	got := lines()
	if len(got) != lograte.Burst+1 || got[lograte.Burst]["suppressed"] != float64(n-lograte.Burst) {
		t.Errorf("after a period: %d lines, last %v; want %d suppressed counted", len(got), got[len(got)-1], n-lograte.Burst)
	}
}
