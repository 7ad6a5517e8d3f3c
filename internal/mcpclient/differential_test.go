package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestMCPCallPathsAgree is the differential test of the hot path
// (fastcall.go) against the SDK's CallTool: the same calls, traced, on the
// same server give the same outcomes and the same spans (names, kinds,
// attributes, status), whatever the result: text, several texts,
// structured, isError, non-text content, a result against the tool's
// outputSchema, a JSON-RPC error.
func TestMCPCallPathsAgree(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "diff", Version: "1"}, nil)
	add := func(tool *mcp.Tool, res func(req *mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		if tool.InputSchema == nil {
			tool.InputSchema = objectSchema
		}
		s.AddTool(tool, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res(req) })
	}
	add(&mcp.Tool{Name: "text"}, func(req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The arguments as values: the two paths' encoders differ in
		// bytes ("<" is escaped by encoding/json only, TestCallSendsArgsJSON).
		b, err := json.Marshal(args(req))
		return &mcp.CallToolResult{Content: text(string(b))}, err
	})
	add(&mcp.Tool{Name: "texts"}, func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, nil
	})
	add(&mcp.Tool{Name: "structured"}, func(req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("x"), StructuredContent: args(req)}, nil
	})
	add(&mcp.Tool{Name: "empty"}, func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	add(&mcp.Tool{Name: "fails"}, func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: text("record not found")}, nil
	})
	add(&mcp.Tool{Name: "image"}, func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}}, nil
	})
	add(&mcp.Tool{Name: "schema", OutputSchema: map[string]any{"type": "object", "required": []any{"n"}}},
		func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("{}"), StructuredContent: map[string]any{"m": 1}}, nil
		})
	add(&mcp.Tool{Name: "rpcerror"}, func(*mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: n is missing"}
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()

	calls := []toolrouter.ExecRequest{
		{Args: map[string]any{"msg": "hi <x>"}},
		{Args: map[string]any{"n": 1.5, "list": []any{"a", nil}}},
	}
	type result struct {
		outcomes []string
		spans    []string
	}
	run := func(sdk bool) result {
		exp := keptSpans{tracetest.NewInMemoryExporter()}
		tel := telemetry.Exporting(exp, false)
		m := mcpclient.New(zerolog.Nop(), nil)
		defer m.Close()
		mcpclient.SetSDKCalls(m, sdk)
		m.Trace, m.TraceHTTP = tel.MCPClient(), tel.Transport
		m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("d", hs.URL)})
		var r result
		for _, name := range []string{"text", "texts", "structured", "empty", "fails", "image", "schema", "rpcerror"} {
			tool := find(t, m, "d/"+name)
			for _, c := range calls {
				c.Tool = tool
				out := m.Call(context.Background(), c)
				var res any
				if out.MCPResult != nil {
					if err := json.Unmarshal(out.MCPResult, &res); err != nil {
						t.Fatalf("%s: MCPResult %s: %v", name, out.MCPResult, err)
					}
				}
				out.MCPResult = nil
				r.outcomes = append(r.outcomes, fmt.Sprintf("%s: %+v result=%v", name, out, res))
			}
		}
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The spans of the calls: tools/call and the HTTP request under it.
		stubs := exp.GetSpans()
		calls := map[string]bool{}
		for _, sp := range stubs {
			if strings.HasPrefix(sp.Name, "tools/call ") {
				calls[sp.SpanContext.SpanID().String()] = true
			}
		}
		for _, sp := range stubs {
			if !calls[sp.SpanContext.SpanID().String()] && !calls[sp.Parent.SpanID().String()] {
				continue
			}
			var attrs []string
			for _, a := range sp.Attributes {
				v := a.Value.String()
				switch a.Key {
				case "jsonrpc.request.id":
					// The hot path numbers its requests from 1<<40.
					if hotID := len(v) > 12; hotID == sdk {
						t.Errorf("sdk %v: span %s has request id %s", sdk, sp.Name, v)
					}
					v = "(varies)"
				case "mcp.session.id", "server.port", "http.response.body.size", "http.request.body.size":
					v = "(varies)" // another session, another id, another port, other byte counts
				}
				attrs = append(attrs, string(a.Key)+"="+v)
			}
			slices.Sort(attrs)
			r.spans = append(r.spans, fmt.Sprintf("%s %s %v %q %v", sp.Name, sp.SpanKind, attrs, sp.Status.Description, sp.Status.Code))
		}
		slices.Sort(r.spans)
		return r
	}
	sdk, hot := run(true), run(false)
	if !reflect.DeepEqual(sdk.outcomes, hot.outcomes) {
		t.Errorf("outcomes differ:\nsdk: %s\nhot: %s", strings.Join(sdk.outcomes, "\n     "), strings.Join(hot.outcomes, "\n     "))
	}
	if len(sdk.spans) < 2*len(calls) {
		t.Fatalf("%d spans of the calls, want at least %d", len(sdk.spans), 2*len(calls))
	}
	if !reflect.DeepEqual(sdk.spans, hot.spans) {
		t.Errorf("spans differ:\nsdk: %s\nhot: %s", strings.Join(sdk.spans, "\n     "), strings.Join(hot.spans, "\n     "))
	}
}

// keptSpans keeps its spans past Shutdown (which flushes the batcher).
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }
