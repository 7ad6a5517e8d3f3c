package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// span is an exported span as the collector received it.
type span struct {
	Name, TraceID, SpanID, Parent string
	Kind                          tracepb.Span_SpanKind
	Attrs                         map[string]string
	Error                         bool
	Links                         []string // span ids
	Service                       string
}

// collector is an OTLP/HTTP trace receiver: it decodes the protobuf export
// requests toolrouterd sends and keeps their spans.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []span
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.add(&req)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// add keeps the spans of an export request.
func (c *collector) add(req *coltracepb.ExportTraceServiceRequest) {
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := attrs(rs.Resource.GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					Parent: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind, Attrs: attrs(s.Attributes),
					Error: s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR, Service: service}
				for _, l := range s.Links {
					sp.Links = append(sp.Links, hex.EncodeToString(l.SpanId))
				}
				c.spans = append(c.spans, sp)
			}
		}
	}
	c.mu.Unlock()
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.GetArrayValue() != nil:
			var parts []string
			for _, e := range v.GetArrayValue().Values {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.Key] = strings.Join(parts, ",")
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		default:
			m[kv.Key] = fmt.Sprint(v.GetIntValue())
			if _, ok := v.Value.(*commonpb.AnyValue_BoolValue); ok {
				m[kv.Key] = fmt.Sprint(v.GetBoolValue())
			}
		}
	}
	return m
}

// env is what points toolrouterd at the collector, exporting promptly.
func (c *collector) env() []string {
	return []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + c.srv.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=20", "OTEL_SERVICE_NAME=tr-under-test"}
}

// wait returns the spans of trace once every name in names is among them.
func (c *collector) wait(t *testing.T, traceID string, names ...string) map[string][]span {
	t.Helper()
	var byName map[string][]span
	poll.Until(t, 15*time.Second, func() error {
		byName = map[string][]span{}
		c.mu.Lock()
		for _, s := range c.spans {
			if s.TraceID == traceID {
				byName[s.Name] = append(byName[s.Name], s)
			}
		}
		c.mu.Unlock()
		for _, n := range names {
			if len(byName[n]) == 0 {
				return fmt.Errorf("span %q of trace %s never arrived; got %v", n, traceID, byName)
			}
		}
		return nil
	})
	return byName
}

// one returns the only span named name.
func one(t *testing.T, spans map[string][]span, name string) span {
	t.Helper()
	if len(spans[name]) != 1 {
		t.Fatalf("want one span %q, got %d: %v", name, len(spans[name]), spans[name])
	}
	return spans[name][0]
}

func wantAttrs(t *testing.T, s span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attrs[k]; !ok || v != "*" && got != v {
			t.Errorf("span %q: %s = %q (present %v), want %q; all: %v", s.Name, k, got, ok, v, s.Attrs)
		}
	}
}

func childOf(t *testing.T, child, parent span) {
	t.Helper()
	if child.Parent != parent.SpanID || child.TraceID != parent.TraceID {
		t.Errorf("span %q (parent %s) is not a child of %q (%s)", child.Name, child.Parent, parent.Name, parent.SpanID)
	}
}

// headerTool is an HTTP tool that echoes its arguments and keeps the
// traceparent of every request.
type headerTool struct {
	mu     sync.Mutex
	parent []string
}

func (h *headerTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.parent = append(h.parent, r.Header.Get("Traceparent"))
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	body, _ := io.ReadAll(r.Body)
	w.Write(body)
}

func (h *headerTool) traceparents() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.parent...)
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

func traceparent(trace, span string) string { return "00-" + trace + "-" + span + "-01" }

// TestTracesRouteBatchAndHTTPTool: a traced /route continues the caller's
// trace through execute_tool to the tool, whose request carries the
// context; a batch has one execute_tool per call; log lines carry the ids;
// the latency histogram carries the trace id as an exemplar.
func TestTracesRouteBatchAndHTTPTool(t *testing.T) {
	t.Parallel()
	col := startCollector(t)
	tool := &headerTool{}
	ts := httptest.NewServer(tool)
	defer ts.Close()
	reg := fmt.Sprintf("tools:\n  - name: trace/echo\n    endpoint: %s/echo\n", ts.URL)
	rt, _ := startRouter(t, reg, append(col.env(), "TOOLROUTER_TRACE_CONTENT=true")...)

	resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "traced", "tool_call": map[string]any{"name": "trace/echo", "arguments": map[string]any{"msg": "hi"}}},
		"Traceparent", traceparent(callerTrace, callerSpan))
	res := resp.JSON(t)
	if res["success"] != true {
		t.Fatalf("route failed: %s", resp.Body)
	}
	spans := col.wait(t, callerTrace, "POST /route", "execute_tool trace/echo", "POST")
	server := one(t, spans, "POST /route")
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER || server.Parent != callerSpan || server.Service != "tr-under-test" {
		t.Errorf("server span: %+v", server)
	}
	wantAttrs(t, server, map[string]string{"http.route": "/route", "http.request.method": "POST", "http.response.status_code": "200"})
	exec := one(t, spans, "execute_tool trace/echo")
	childOf(t, exec, server)
	wantAttrs(t, exec, map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "trace/echo",
		"gen_ai.tool.call.id": res["tool_call_id"].(string), "gen_ai.tool.type": "extension",
		"toolrouterd.plan.id": "traced", "toolrouterd.sequence": "0", "gen_ai.tool.call.arguments": `{"msg":"hi"}`, "gen_ai.tool.call.result": `{"msg":"hi"}`})
	client := one(t, spans, "POST")
	childOf(t, client, exec)
	if client.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("tool request span kind %v", client.Kind)
	}
	if got := tool.traceparents(); len(got) != 1 || got[0] != traceparent(callerTrace, client.SpanID) {
		t.Errorf("the tool got traceparent %v, want the client span %s", got, client.SpanID)
	}
	if !strings.Contains(rt.Output(), `"trace_id":"`+callerTrace+`"`) {
		t.Errorf("no log line carries the trace id:\n%s", rt.Output())
	}

	// A failed call: error.type is its category.
	do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "traced", "tool_call": map[string]any{"name": "nope", "arguments": map[string]any{}}},
		"Traceparent", traceparent("11111111111111111111111111111111", callerSpan))
	failed := one(t, col.wait(t, "11111111111111111111111111111111", "execute_tool nope"), "execute_tool nope")
	if !failed.Error || failed.Attrs["error.type"] != "not_found" {
		t.Errorf("failed call span: %+v", failed)
	}

	// A batch: one server span, one execute_tool per call, in sequence.
	do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "batch", "tool_calls": []any{
		map[string]any{"name": "trace/echo", "arguments": map[string]any{"n": 1}},
		map[string]any{"name": "trace/echo", "arguments": map[string]any{"n": 2}},
	}}, "Traceparent", traceparent("22222222222222222222222222222222", callerSpan))
	spans = col.wait(t, "22222222222222222222222222222222", "POST /route/batch", "execute_tool trace/echo")
	batch := one(t, spans, "POST /route/batch")
	var calls []span
	poll.Until(t, 10*time.Second, func() error {
		if calls = col.wait(t, "22222222222222222222222222222222", "execute_tool trace/echo")["execute_tool trace/echo"]; len(calls) < 2 {
			return fmt.Errorf("batch execute_tool spans: %v, want 2", calls)
		}
		return nil
	})
	seqs := map[string]bool{}
	for _, c := range calls {
		childOf(t, c, batch)
		seqs[c.Attrs["toolrouterd.sequence"]] = true
	}
	if len(calls) != 2 || !seqs["0"] || !seqs["1"] {
		t.Errorf("batch execute_tool spans: %v", calls)
	}

	// The tool-call latency carries the trace id as an exemplar (OpenMetrics).
	req, _ := http.NewRequest("GET", rt.URL()+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.HasPrefix(mresp.Header.Get("Content-Type"), "application/openmetrics-text") ||
		!strings.Contains(strings.ReplaceAll(grepLines(string(body), `toolrouter_tool_call_duration_seconds_bucket{tool="trace/echo"`), callerTrace, "22222222222222222222222222222222"),
			`# {trace_id="22222222222222222222222222222222"}`) { // the exemplar is the latest call's of its bucket
		t.Errorf("no OpenMetrics exemplar with the trace id:\n%s", grepLines(string(body), "toolrouter_tool_call_duration_seconds_bucket"))
	}
}

// TestTracesMCP: a call to a tool of an MCP server is a tools/call CLIENT
// span whose context arrives in params._meta; a tools/call arriving on /mcp
// with _meta.traceparent is a SERVER span continuing that trace.
func TestTracesMCP(t *testing.T) {
	t.Parallel()
	col := startCollector(t)
	var mu sync.Mutex
	var metas []map[string]any
	srv := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		metas = append(metas, req.Params.GetMeta())
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	ms := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ms.Close) // after toolrouterd stops and ends its session
	tool := &headerTool{}
	ts := httptest.NewServer(tool)
	defer ts.Close()
	reg := fmt.Sprintf("tools:\n  - name: plain_echo\n    endpoint: %s/echo\nmcp_servers:\n  - name: tm\n    url: %s\n", ts.URL, ms.URL)
	rt, _ := startRouter(t, reg, col.env()...)

	// The server's tools join the registry once discovered.
	call := map[string]any{"plan_id": "mcp", "tool_call": map[string]any{"name": "tm/echo", "arguments": map[string]any{}}}
	poll.Until(t, 15*time.Second, func() error {
		if r := do(t, "POST", rt.URL()+"/route", call); r.JSON(t)["success"] != true {
			return fmt.Errorf("tm/echo never routable: %s", r.Body)
		}
		return nil
	})
	const trace = "33333333333333333333333333333333"
	if r := do(t, "POST", rt.URL()+"/route", call, "Traceparent", traceparent(trace, callerSpan)); r.JSON(t)["success"] != true {
		t.Fatalf("%s", r.Body)
	}
	spans := col.wait(t, trace, "POST /route", "execute_tool tm/echo", "tools/call echo")
	exec := one(t, spans, "execute_tool tm/echo")
	childOf(t, exec, one(t, spans, "POST /route"))
	rpc := one(t, spans, "tools/call echo")
	childOf(t, rpc, exec)
	if rpc.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("tools/call span kind %v", rpc.Kind)
	}
	msURL, _ := url.Parse(ms.URL)
	wantAttrs(t, rpc, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "mcp.session.id": "*", "jsonrpc.request.id": "*",
		"server.address": msURL.Hostname(), "server.port": msURL.Port(), "mcp.protocol.version": "*"})
	if v := rpc.Attrs["mcp.protocol.version"]; len(v) != len("2025-11-25") {
		t.Errorf("mcp.protocol.version = %q, want a dated version", v)
	}
	// Session ids are credentials: spans carry their digest only.
	digests := map[string]bool{}
	for ss := range srv.Sessions() {
		digests[sessionDigest(ss.ID())] = true
	}
	if !digests[rpc.Attrs["mcp.session.id"]] {
		t.Errorf("client span mcp.session.id %q is not the digest of the backend session's id", rpc.Attrs["mcp.session.id"])
	}
	mu.Lock()
	last := metas[len(metas)-1]
	mu.Unlock()
	if last["traceparent"] != traceparent(trace, rpc.SpanID) {
		t.Errorf("the MCP server got _meta %v, want traceparent of span %s", last, rpc.SpanID)
	}

	// An MCP client calling /mcp with the context in _meta.
	// A session client (2025-11-25), so that the server span has a session
	// id; 2026-07-28 clients are stateless and have none.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: rt.URL() + "/mcp"},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const trace2 = "44444444444444444444444444444444"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plain_echo", Arguments: map[string]any{"x": 1},
		Meta: mcp.Meta{"traceparent": traceparent(trace2, callerSpan)}})
	if err != nil || res.IsError {
		t.Fatalf("/mcp tools/call: %v %+v", err, res)
	}
	spans = col.wait(t, trace2, "tools/call plain_echo", "execute_tool plain_echo")
	in := one(t, spans, "tools/call plain_echo")
	if in.Kind != tracepb.Span_SPAN_KIND_SERVER || in.Parent != callerSpan {
		t.Errorf("/mcp server span: %+v", in)
	}
	sdkID, _, _ := strings.Cut(cs.ID(), ".") // the token names the client after a dot (none here: open)
	wantAttrs(t, in, map[string]string{"mcp.method.name": "tools/call", "mcp.session.id": sessionDigest(sdkID)})
	childOf(t, one(t, spans, "execute_tool plain_echo"), in)
}

// TestTracesRun: a /runs run is invoke_agent → iteration N → chat {model}
// (with usage and finish reasons, gen_ai.provider.name as the semantic
// conventions name it) and execute_tool, and the provider gets the context
// in traceparent; with every provider kind.
func TestTracesRun(t *testing.T) {
	t.Parallel()
	for provider, name := range map[string]string{"openai": "openai", "anthropic": "anthropic", "ollama": "ollama",
		"openai-responses": "openai", "gemini": "gcp.gemini", "bedrock": "aws.bedrock"} {
		t.Run(provider, func(t *testing.T) { testTracesRun(t, provider, name) })
	}
}

func testTracesRun(t *testing.T, provider, providerName string) {
	col := startCollector(t)
	tools := startTools(t)
	fake := startFakeLLM(t, provider)
	rt, _ := startRouter(t, runsRegistry(t, tools.addr, fake), append(col.env(), bedrockEnv("AKIDTRACES")...)...)
	model := "fake-model"
	if provider == "gemini" {
		model = "gemini-3-flash-preview"
	}
	fake.script(t, map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": "x"})}}, map[string]any{"text": "done"})
	const trace = "55555555555555555555555555555555"
	resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "echo"}, "Traceparent", traceparent(trace, callerSpan))
	if run := decodeRun(t, resp); run.Status != "completed" {
		t.Fatalf("%s", resp.Body)
	}
	spans := col.wait(t, trace, "POST /runs", "invoke_agent toolrouterd", "iteration 1", "iteration 2", "chat "+model, "execute_tool test/echo")
	agent := one(t, spans, "invoke_agent toolrouterd")
	childOf(t, agent, one(t, spans, "POST /runs"))
	wantAttrs(t, agent, map[string]string{"gen_ai.operation.name": "invoke_agent", "toolrouterd.run.status": "completed"})
	it1, it2 := one(t, spans, "iteration 1"), one(t, spans, "iteration 2")
	childOf(t, it1, agent)
	childOf(t, it2, agent)
	childOf(t, one(t, spans, "execute_tool test/echo"), it1)
	chats := spans["chat "+model]
	if len(chats) != 2 {
		t.Fatalf("chat spans: %v", chats)
	}
	for _, c := range chats {
		if c.Parent != it1.SpanID && c.Parent != it2.SpanID || c.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("chat span %+v", c)
		}
		wantAttrs(t, c, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": providerName, "gen_ai.request.model": model,
			"gen_ai.usage.input_tokens": "*", "gen_ai.usage.output_tokens": "*", "gen_ai.response.finish_reasons": "*"})
	}
	// The provider's requests carry the trace.
	r, err := http.Get("http://" + fake.addr + "/_fakellm/requests")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if strings.Count(string(raw), "00-"+trace+"-") != 2 {
		t.Errorf("the provider did not get the trace in traceparent twice: %s", raw)
	}
}

// sessionDigest is what a span may say of an MCP session id: 24 hex digits
// of its SHA-256.
func sessionDigest(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:12])
}

// TestTracesAuditLine: the component=audit line of a traced call names its
// request (request_id, as echoed in X-Request-Id) and its exported
// execute_tool span (trace_id, span_id), so an operator goes from an audit
// line to its trace (issue 21, item 8). At info, the level operators run.
func TestTracesAuditLine(t *testing.T) {
	t.Parallel()
	col := startCollector(t)
	ts := httptest.NewServer(&headerTool{})
	defer ts.Close()
	reg := fmt.Sprintf("tools:\n  - name: trace/echo\n    endpoint: %s/echo\n", ts.URL)
	rt, _ := startRouter(t, reg, append(col.env(), "TOOLROUTER_LOG_LEVEL=info")...)

	const trace = "44444444444444444444444444444444"
	resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "audited", "tool_call": map[string]any{"name": "trace/echo", "arguments": map[string]any{}}},
		"Traceparent", traceparent(trace, callerSpan), "X-Request-Id", "audit-line-req")
	res := resp.JSON(t)
	if res["success"] != true {
		t.Fatalf("route failed: %s", resp.Body)
	}
	exec := one(t, col.wait(t, trace, "execute_tool trace/echo"), "execute_tool trace/echo")
	id := res["tool_call_id"].(string)
	line := rt.waitOutput(t, "the audit line", func(out string) (string, bool) {
		l := grepLines(out, `"tool_call_id":"`+id+`"`)
		return l, strings.Contains(l, `"component":"audit"`)
	})
	var got struct {
		RequestID string `json:"request_id"`
		TraceID   string `json:"trace_id"`
		SpanID    string `json:"span_id"`
	}
	if err := json.Unmarshal([]byte(grepLines(line, `"component":"audit"`)), &got); err != nil {
		t.Fatalf("audit line %q: %v", line, err)
	}
	if got.RequestID != "audit-line-req" || got.TraceID != exec.TraceID || got.SpanID != exec.SpanID {
		t.Errorf("audit line names request %q, trace %q, span %q; want audit-line-req, %s, %s (execute_tool)\n%s",
			got.RequestID, got.TraceID, got.SpanID, exec.TraceID, exec.SpanID, line)
	}
}
