package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

type routeFunc func(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error)

func (f routeFunc) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	return f(ctx, req)
}

// windowLimiter is an access.Window as a Limiter.
type windowLimiter struct{ w *access.Window }

func (l windowLimiter) Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error) {
	return l.w.Take(ctx, c, calls.N)
}

type noTools struct{}

func (noTools) Tools() []*toolrouter.Tool { return nil }

// TestInterceptCountsCallsAdmitMissed: a tools/call the SDK dispatches
// that the HTTP pre-check did not pay for is taken from the client's rate
// limit where it runs; over the limit it is the JSON-RPC rate-limit error
// and the router is not called.
func TestInterceptCountsCallsAdmitMissed(t *testing.T) {
	w := access.NewWindow()
	w.Now = func() time.Time { return time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC) }
	routed := 0
	h := New(Deps{
		Router: routeFunc(func(_ context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
			routed++
			// The call itself, built by the gateway: no provider payload
			// for the router to detect again (issue 31 item 2).
			if c := req.Call; c.Format != toolrouter.FormatMCP || c.ToolName != "x" || c.Arguments == nil || c.HasProviderCallID ||
				req.Entry != toolrouter.EntryMCP || req.Relay == nil || req.Unreadable != nil {
				t.Errorf("request %+v", req)
			}
			return &toolrouter.Result{Success: true, Output: []byte(`{}`)}, nil
		}),
		Tools:   func() Tools { return noTools{} },
		Limiter: windowLimiter{w},
	})
	c := access.NewClients(nil, []registry.Client{{Name: "billing", Tools: []string{"*"}, RateLimit: registry.Rate{N: 1, Window: time.Hour}}}).ByName("billing")
	handle := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		t.Fatal("tools/call reached the SDK's handler")
		return nil, nil
	})
	req := func() *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"},
			Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: c}}}}
	}
	if _, err := handle(context.Background(), "tools/call", req()); err != nil || routed != 1 {
		t.Fatalf("first call: %v, routed %d", err, routed)
	}
	_, err := handle(context.Background(), "tools/call", req())
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32023 || routed != 1 {
		t.Fatalf("second call over 1/h: %v, routed %d", err, routed)
	}
	// SEP-3304: data.retryAfterMs, whole seconds (the window is an hour).
	var data struct {
		RetryAfterMs int64 `json:"retryAfterMs"`
	}
	if json.Unmarshal(je.Data, &data) != nil || data.RetryAfterMs < 1000 || data.RetryAfterMs > 3600*1000 || data.RetryAfterMs%1000 != 0 {
		t.Errorf("second call's data: %s", je.Data)
	}
}

// TestInterceptGivesEveryErrorACode (issue 21 finding 11): an error a
// method handler returns without a JSON-RPC code (which the SDK would
// answer with code 0) leaves as -32600; coded errors keep their code.
func TestInterceptGivesEveryErrorACode(t *testing.T) {
	h := New(Deps{Tools: func() Tools { return noTools{} }})
	for _, c := range []struct {
		err  error
		code int64
	}{
		{errors.New("reading resource x: read handler returned nil information"), jsonrpc.CodeInvalidRequest},
		{&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}, jsonrpc.CodeInvalidParams},
		{fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}), jsonrpc.CodeMethodNotFound},
	} {
		mh := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, c.err })
		_, err := mh(context.Background(), "resources/read", &mcp.ReadResourceRequest{})
		var coded *jsonrpc.Error
		if !errors.As(err, &coded) || coded.Code != c.code {
			t.Errorf("%v: answered %v, want code %d", c.err, err, c.code)
		}
	}
}
