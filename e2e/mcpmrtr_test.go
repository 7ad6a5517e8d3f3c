package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPInputRequired: under protocol 2026-07-28 a backend's
// input_required result (multi round-trip requests) reaches the /mcp
// caller, and its retry reaches the backend, on whichever replica it lands
// (docs/mcp.md "Elicitation through the gateway (multi round-trip
// requests)"): the go-sdk client answers an elicitation through the gateway
// by itself; a three-round call started on one replica finishes on
// another; a changed requestState is refused. Older clients and /route get
// a failure saying why.
func TestMCPInputRequired(t *testing.T) {
	t.Parallel()
	fix := startFixture(t)
	registry := fmt.Sprintf(`
mcp_servers:
  - name: fixture
    url: %s/mcp
    prefix: ""
`, fix.URL())
	// Two replicas, each on its own memory store: they share the key
	// signing requestStates through the setting.
	key := "TOOLROUTER_STATE_KEY=an e2e state key of 32 characters or more"
	a, _ := startRouter(t, registry, key)
	b, _ := startRouter(t, registry, key)
	for _, r := range []*proc{a, b} {
		waitTools(t, r, "test_input_required_result_multi_round")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asked atomic.Int32
	dial := func(r *proc, opts *mcp.ClientOptions, so *mcp.ClientSessionOptions) *mcp.ClientSession {
		t.Helper()
		if opts == nil {
			opts = &mcp.ClientOptions{}
		}
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if req.Params.Message != "What is your name?" {
				return nil, fmt.Errorf("unexpected elicitation %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}, nil
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.URL() + "/mcp", MaxRetries: -1}, so)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	text := func(res *mcp.CallToolResult) string {
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n")
	}

	// The SDK client fulfils the input request and retries by itself.
	auto := dial(a, nil, nil)
	if v := auto.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	res, err := auto.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{}})
	if err != nil || res.IsError || text(res) != "Hello, Alice!" || asked.Load() != 1 {
		t.Fatalf("elicitation through the gateway: err %v, result %+v (%q), asked %d times", err, res, text(res), asked.Load())
	}

	// By hand, one round per replica: a, b, a.
	manual := map[*proc]*mcp.ClientSession{}
	for _, r := range []*proc{a, b} {
		manual[r] = dial(r, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, nil)
	}
	call := func(r *proc, name string, responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
		return manual[r].CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{},
			InputResponses: responses, RequestState: state})
	}
	answer := func(content map[string]any) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: content}
	}
	r1, err := call(a, "test_input_required_result_multi_round", nil, "")
	if err != nil || !r1.NeedsInput() || !strings.HasPrefix(r1.RequestState, "trs2.") || r1.InputRequests["step1"] == nil || len(r1.Content) != 0 {
		t.Fatalf("round 1: err %v, result %+v", err, r1)
	}
	if e, ok := r1.InputRequests["step1"].(*mcp.ElicitParams); !ok || e.Message != "Step 1: What is your name?" {
		t.Errorf("round 1 asks %#v", r1.InputRequests["step1"])
	}
	if r1.Meta["toolrouter/tool_call_id"] == nil {
		t.Errorf("round 1 _meta = %v, want toolrouter's keys", r1.Meta)
	}
	r2, err := call(b, "test_input_required_result_multi_round", mcp.InputResponseMap{"step1": answer(map[string]any{"name": "Alice"})}, r1.RequestState)
	if err != nil || !r2.NeedsInput() || r2.InputRequests["step2"] == nil || r2.RequestState == r1.RequestState {
		t.Fatalf("round 2 (other replica): err %v, result %+v", err, r2)
	}
	r3, err := call(a, "test_input_required_result_multi_round", mcp.InputResponseMap{"step2": answer(map[string]any{"color": "blue"})}, r2.RequestState)
	if err != nil || r3.NeedsInput() || r3.IsError || text(r3) != "Multi-round complete: Alice likes blue" {
		t.Fatalf("round 3: err %v, result %+v", err, r3)
	}

	// A requestState changed on the way, or presented for another tool, is
	// refused before any backend sees it.
	if _, err := call(b, "test_input_required_result_multi_round", mcp.InputResponseMap{"step2": answer(map[string]any{"color": "red"})},
		r2.RequestState+"-TAMPERED"); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Errorf("tampered requestState: err %v, want an invalid-params error naming requestState", err)
	}
	if _, err := call(b, "test_input_required_result_request_state", mcp.InputResponseMap{"confirm": answer(map[string]any{"ok": true})},
		r2.RequestState); err == nil || !strings.Contains(err.Error(), "issued for the tool test_input_required_result_multi_round") {
		t.Errorf("requestState of another tool: err %v", err)
	}
	// The backend's own state is checked by the backend.
	rs, err := call(a, "test_input_required_result_request_state", nil, "")
	if err != nil || !rs.NeedsInput() {
		t.Fatalf("request_state round 1: err %v, result %+v", err, rs)
	}
	ok, err := call(b, "test_input_required_result_request_state", mcp.InputResponseMap{"confirm": answer(map[string]any{"ok": true})}, rs.RequestState)
	if err != nil || text(ok) != "state-ok: requestState received and confirmation accepted" {
		t.Errorf("request_state retry: err %v, result %+v", err, ok)
	}

	// A client on 2025-11-25 cannot answer it: an error result saying so.
	old := dial(a, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	before := asked.Load()
	res, err = old.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "asks for input (elicitation)") || !strings.Contains(text(res), "2026-07-28") ||
		res.Meta["toolrouter/error_category"] != "execution" || asked.Load() != before {
		t.Errorf("2025-11-25 client: err %v, result %+v (%q)", err, res, text(res))
	}

	// /route: a failure naming the way that works.
	rr := do(t, http.MethodPost, a.URL()+"/route", map[string]any{"plan_id": "mrtr",
		"tool_call": map[string]any{"name": "test_input_required_result_elicitation", "arguments": map[string]any{}}}).JSON(t)
	if rr["success"] != false || rr["error_category"] != "execution" ||
		!strings.Contains(fmt.Sprint(rr["error"]), "the tool asks for input (elicitation); call it over /mcp") {
		t.Errorf("/route: success %v, category %v, error %v", rr["success"], rr["error_category"], rr["error"])
	}
}
