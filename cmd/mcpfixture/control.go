package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// control lets tests change the fixture at runtime (HTTP mode only): the
// tool "mutable" whose description POST /control/mutable
// {"description": "…"} replaces (the SDK then sends
// notifications/tools/list_changed to every session), and GET
// /control/calls, the tools/call requests received so far by tool name.
type control struct {
	srv   *mcp.Server
	mu    sync.Mutex
	calls map[string]int
}

const mutableDescription = "Echoes msg back."

func newControl(srv *mcp.Server) *control {
	c := &control{srv: srv, calls: map[string]int{}}
	c.describe(mutableDescription)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				c.mu.Lock()
				c.calls[p.Name]++
				c.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	return c
}

// describe (re)adds the tool mutable with description desc.
func (c *control) describe(desc string) {
	c.srv.AddTool(&mcp.Tool{Name: "mutable", Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Msg string `json:"msg"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "mutable: " + in.Msg}}}, nil
		})
}

func (c *control) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /control/mutable", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Description string `json:"description"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Description == "" {
			http.Error(w, `want {"description": "…"}`, http.StatusBadRequest)
			return
		}
		c.describe(in.Description)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /control/calls", func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		b, _ := json.Marshal(c.calls)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}
