package router_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// bodyTransport answers like echoTransport and keeps the request bodies.
type bodyTransport struct {
	mu     sync.Mutex
	bodies []string
}

func (t *bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.bodies = append(t.bodies, string(b))
	t.mu.Unlock()
	return echoTransport{}.RoundTrip(r)
}

// recordingAuditor keeps the records and saves them as audit.Trail does.
type recordingAuditor struct{ recs []toolrouter.AuditRecord }

func (a *recordingAuditor) RecordWith(ctx context.Context, save toolrouter.AuditSaver, recs ...toolrouter.AuditRecord) {
	a.recs = append(a.recs, recs...)
	if save != nil {
		_ = save.SaveAudited(ctx, recs)
	}
}

// TestAuditedRouteEncodesArgumentsOnce: with an audit trail, the router
// encodes the arguments once for the tool's request and the audit digest;
// the tool still gets json.Marshal's bytes (keys sorted) and the record
// the digest of those bytes, as when each encoded them.
func TestAuditedRouteEncodesArgumentsOnce(t *testing.T) {
	t.Parallel()
	reg, err := registry.Parse("t.yaml", []byte(benchRegistry), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	tr := &bodyTransport{}
	au := &recordingAuditor{}
	st := memory.New()
	rt := &rig{
		Tools:   func() pipeline.Tools { return reg },
		Exec:    remote.New(remote.Options{Transport: tr}),
		Seq:     st,
		Results: st,
		Audit:   au,
	}
	for _, args := range []string{`{"msg":"hi","b":{"z":1,"a":[2,"x<"]},"a":null}`, `{}`} {
		payload := map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "test/echo", "arguments": args}}
		res, err := rt.Route(context.Background(), "p", payload, nil)
		if err != nil || !res.Success {
			t.Fatalf("route %s: err=%v res=%+v", args, err, res)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(args), &m); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(m)
		if got := tr.bodies[len(tr.bodies)-1]; got != string(want) {
			t.Errorf("tool got %s, want %s", got, want)
		}
		rec := au.recs[len(au.recs)-1]
		if rec.ArgsSHA256 != toolrouter.ArgsDigest(m) || rec.ArgsSHA256 != toolrouter.ArgsDigest(res.Arguments) {
			t.Errorf("audit digest %s, want %s", rec.ArgsSHA256, toolrouter.ArgsDigest(m))
		}
	}
}
