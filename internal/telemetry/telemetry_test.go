package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/telemetry"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSetupErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	for v, val := range map[string]string{
		"OTEL_TRACES_EXPORTER":        "zipkin",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
		"TOOLROUTER_TRACE_CONTENT":    "maybe",
		"TOOLROUTER_TRACE_STORE":      "sometimes",
	} {
		m := map[string]string{"OTEL_TRACES_EXPORTER": "otlp", v: val}
		if _, err := telemetry.Setup(context.Background(), env(m)); err == nil || !strings.HasPrefix(err.Error(), v+":") {
			t.Errorf("%s=%s: %v", v, val, err)
		}
	}
}

// With the default (no exporter) nothing is traced and nothing is wrapped.
func TestOffByDefault(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.Setup(context.Background(), env(nil))
	if err != nil || tel.Enabled() {
		t.Fatalf("%v %v", tel.Enabled(), err)
	}
	base := http.DefaultTransport
	if tel.Transport(base) != base || tel.MCPClient() != nil || tel.MCPServer() != nil {
		t.Error("tracing off still wraps")
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx, end := tel.StartHTTPServer(r)
	end("/", 200)
	if ctx != r.Context() {
		t.Error("tracing off changed the request context")
	}
	var nilTel *telemetry.Telemetry
	if nilTel.Enabled() || nilTel.Shutdown(context.Background()) != nil {
		t.Error("a nil Telemetry is not a no-op")
	}
}

// TestMCPServerSpanWithoutSession: a tools/call that reaches the server
// middleware without a session (the /mcp fast path's, a nil
// *mcp.ServerSession) gets its span, without a session id, and no panic.
func TestMCPServerSpanWithoutSession(t *testing.T) {
	tel, err := telemetry.Setup(context.Background(), env(map[string]string{
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}))
	if err != nil || !tel.Enabled() {
		t.Fatalf("%v %v", tel.Enabled(), err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = tel.Shutdown(ctx)
	}()
	called := false
	h := tel.MCPServer()(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		called = true
		return &mcp.CallToolResult{}, nil
	})
	if _, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}}); err != nil || !called {
		t.Fatalf("called %v, err %v", called, err)
	}
}
