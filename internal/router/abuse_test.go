package router_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A batch holds at most MaxBatchOutput output bytes; the calls over it fail
// as resource with an error naming the limit (issue 14, item 5).
func TestBatchOutputCap(t *testing.T) {
	t.Parallel()
	out := json.RawMessage(`"` + strings.Repeat("x", 998) + `"`) // 1000 bytes
	rt := newTestRouter(t, &stubExec{out: toolrouter.Outcome{Output: out, Status: 200, Attempts: 1, Answered: true}}, nil)
	rt.BatchConcurrency = 1
	rt.MaxBatchOutput = 3500
	call := decodeJSON(t, `{"id":"a","function":{"name":"test/echo","arguments":"{}"}}`)
	res, err := rt.Batch(context.Background(), "p", []any{call, call, call, call, call}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ok, failed int
	for _, r := range res {
		switch {
		case r.Success && len(r.Output) == 1000:
			ok++
		case !r.Success && *r.ErrorCategory == toolrouter.CategoryResource && r.Output == nil &&
			strings.Contains(*r.Error, "TOOLROUTER_MAX_BATCH_OUTPUT_BYTES (3500 bytes)"):
			failed++
		default:
			t.Errorf("unexpected result %+v", r)
		}
	}
	if ok != 3 || failed != 2 {
		t.Fatalf("%d succeeded and %d failed, want 3 and 2", ok, failed)
	}
	// The cap is per batch: the next one starts afresh, and single routes
	// are not capped.
	if res, _ := rt.Batch(context.Background(), "p", []any{call}, nil); !res[0].Success {
		t.Fatalf("next batch: %+v", res[0])
	}
}
