package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// grpcReceiver is the OTLP/gRPC trace service of a collector.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	c *collector
}

func (g grpcReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.c.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// startGRPCCollector is a collector receiving OTLP over gRPC on a
// loopback port; it returns the environment that points toolrouterd at it.
func startGRPCCollector(t *testing.T) (*collector, []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, grpcReceiver{c: c})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	// An http:// endpoint means no TLS to the gRPC exporter.
	return c, []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_BSP_SCHEDULE_DELAY=20", "OTEL_SERVICE_NAME=tr-grpc"}
}

// TestTracesOverGRPC: with OTEL_EXPORTER_OTLP_PROTOCOL=grpc a route's
// spans reach a gRPC OTLP receiver, parented as over HTTP.
func TestTracesOverGRPC(t *testing.T) {
	col, env := startGRPCCollector(t)
	tool := &headerTool{}
	ts := httptest.NewServer(tool)
	defer ts.Close()
	rt, _ := startRouter(t, fmt.Sprintf("tools:\n  - name: trace/echo\n    endpoint: %s/echo\n", ts.URL), env...)
	const trace = "66666666666666666666666666666666"
	if r := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "grpc", "tool_call": map[string]any{"name": "trace/echo", "arguments": map[string]any{}}},
		"Traceparent", traceparent(trace, callerSpan)); r.JSON(t)["success"] != true {
		t.Fatalf("%s", r.Body)
	}
	spans := col.wait(t, trace, "POST /route", "execute_tool trace/echo", "POST")
	server := one(t, spans, "POST /route")
	if server.Parent != callerSpan || server.Service != "tr-grpc" || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span over gRPC: %+v", server)
	}
	exec := one(t, spans, "execute_tool trace/echo")
	childOf(t, exec, server)
	childOf(t, one(t, spans, "POST"), exec)
}

// TestTracesStoreCalls: with TOOLROUTER_TRACE_STORE=true the store calls
// of a route are CLIENT spans "store {operation}" with db.system.name and
// db.operation.name; without it a route's trace has none.
func TestTracesStoreCalls(t *testing.T) {
	tool := &headerTool{}
	ts := httptest.NewServer(tool)
	defer ts.Close()
	reg := fmt.Sprintf("tools:\n  - name: trace/echo\n    endpoint: %s/echo\n", ts.URL)
	call := map[string]any{"plan_id": "stored", "tool_call": map[string]any{"name": "trace/echo", "arguments": map[string]any{}}}

	col := startCollector(t)
	db := "sqlite://" + filepath.Join(t.TempDir(), "tr.db")
	rt, _ := startRouter(t, reg, append(col.env(), "TOOLROUTER_TRACE_STORE=true", "TOOLROUTER_STORE="+db)...)
	const on = "77777777777777777777777777777777"
	if r := do(t, "POST", rt.URL()+"/route", call, "Traceparent", traceparent(on, callerSpan)); r.JSON(t)["success"] != true {
		t.Fatalf("%s", r.Body)
	}
	spans := col.wait(t, on, "POST /route", "store next_sequence", "store save_result")
	server := one(t, spans, "POST /route")
	for op, s := range map[string]span{"next_sequence": one(t, spans, "store next_sequence"), "save_result": one(t, spans, "store save_result")} {
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT || s.Error {
			t.Errorf("store span %+v", s)
		}
		wantAttrs(t, s, map[string]string{"db.system.name": "sqlite", "db.operation.name": op})
	}
	childOf(t, one(t, spans, "store next_sequence"), server)
	childOf(t, one(t, spans, "store save_result"), one(t, spans, "execute_tool trace/echo"))

	// Off (the default): the server span ends after every span of its
	// request, so once it is here any store span would be too.
	col2 := startCollector(t)
	rt2, _ := startRouter(t, reg, col2.env()...)
	const off = "88888888888888888888888888888888"
	if r := do(t, "POST", rt2.URL()+"/route", call, "Traceparent", traceparent(off, callerSpan)); r.JSON(t)["success"] != true {
		t.Fatalf("%s", r.Body)
	}
	for name := range col2.wait(t, off, "POST /route", "execute_tool trace/echo") {
		if strings.HasPrefix(name, "store ") {
			t.Errorf("store span %q without TOOLROUTER_TRACE_STORE", name)
		}
	}
}
