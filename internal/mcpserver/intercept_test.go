package mcpserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

type routeFunc func(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error)

func (f routeFunc) Route(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error) {
	return f(ctx, planID, payload, meta)
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
		Router: routeFunc(func(context.Context, string, any, map[string]any) (*toolrouter.Result, error) {
			routed++
			return &toolrouter.Result{Success: true, Output: []byte(`{}`)}, nil
		}),
		Tools:   func() Tools { return noTools{} },
		Limiter: w,
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
	if !errors.As(err, &je) || je.Code != codeRateLimited || routed != 1 {
		t.Errorf("second call over 1/h: %v, routed %d", err, routed)
	}
}
