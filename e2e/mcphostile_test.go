package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 21: /mcp under hostile clients, through the real binary.

// mcpRaw is an answer of /mcp: the status, the headers and the body (the
// data of the last event of an SSE answer).
type mcpRaw struct {
	Status int
	Header http.Header
	Body   []byte
	Events [][]byte // the data of every SSE event
}

// rpc decodes the answer as one JSON-RPC response.
func (r mcpRaw) rpc(t *testing.T) (result map[string]any, code int, message string) {
	t.Helper()
	var m struct {
		Result map[string]any `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("not a JSON-RPC response (%d): %s", r.Status, r.Body)
	}
	if m.Error != nil {
		return nil, m.Error.Code, m.Error.Message
	}
	return m.Result, 0, ""
}

// mcpPost posts body to url's /mcp in session tok (none when ""), with
// extra header pairs.
func mcpPost(t *testing.T, url, tok, body string, header ...string) mcpRaw {
	t.Helper()
	return mcpSend(t, http.MethodPost, url, tok, body, header...)
}

func mcpSend(t *testing.T, method, url, tok, body string, header ...string) mcpRaw {
	t.Helper()
	req, err := http.NewRequest(method, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Mcp-Session-Id", tok)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var events [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && len(bytes.TrimSpace(d)) > 0 {
				events = append(events, d)
			}
		}
		b = nil
		if len(events) > 0 {
			b = events[len(events)-1]
		}
	}
	return mcpRaw{resp.StatusCode, resp.Header, b, events}
}

// mcpSession opens a session of protocol version (2025-03-26 or later,
// before 2026-07-28) with raw requests and returns its token.
func mcpSession(t *testing.T, url, version string, header ...string) string {
	t.Helper()
	r := mcpPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, header...)
	tok := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || tok == "" {
		t.Fatalf("initialize: %d %s", r.Status, r.Body)
	}
	if r := mcpPost(t, url, tok, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, append([]string{"Mcp-Protocol-Version", version}, header...)...); r.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.Status, r.Body)
	}
	return tok
}

// TestMCPPlanIDControlCharacters (issue 21 finding 12): a tools/call whose
// _meta.toolrouter/plan_id holds a control character is refused as invalid
// params naming the field, before any sequence is taken, as on /route.
func TestMCPPlanIDControlCharacters(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr))
	tok := mcpSession(t, rt.URL(), "2025-11-25")
	for _, plan := range []string{"a\nb", "a\x00b", "a\x7fb", "a\rX-Injected: 1"} {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
			"params": map[string]any{"name": "test/echo", "arguments": map[string]any{}, "_meta": map[string]any{"toolrouter/plan_id": plan}}})
		r := mcpPost(t, rt.URL(), tok, string(body))
		res, code, msg := r.rpc(t)
		if code != -32602 || !strings.Contains(msg, "toolrouter/plan_id") {
			t.Errorf("plan_id %q: code %d %q, result %v; want invalid params naming the field", plan, code, msg, res)
		}
	}
	// No sequence of the plan was taken: its first call is sequence 0.
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test/echo","arguments":{},"_meta":{"toolrouter/plan_id":"a"}}}`
	res, code, msg := mcpPost(t, rt.URL(), tok, body).rpc(t)
	if meta, _ := res["_meta"].(map[string]any); code != 0 || meta["toolrouter/sequence"] != float64(0) {
		t.Errorf("a valid plan id: %v (%d %s), want sequence 0", res, code, msg)
	}
}

// TestMCPSessionlessRequestIs400 (issue 21 finding 11): a request of the
// session era other than initialize, sent without a session, is the
// transport's 400, never a JSON-RPC error of code 0.
func TestMCPSessionlessRequestIs400(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr))
	for _, version := range []string{"", "2025-03-26", "2025-11-25"} {
		h := []string{}
		if version != "" {
			h = []string{"Mcp-Protocol-Version", version}
		}
		for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test/echo","arguments":{}}}`} {
			r := mcpPost(t, rt.URL(), "", body, h...)
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "Mcp-Session-Id") || strings.Contains(string(r.Body), `"code":0`) {
				t.Errorf("version %q, %s: %d %s; want 400 asking for a session", version, body, r.Status, r.Body)
			}
		}
	}
}

// concurrencyTool is a tool server whose one tool counts the calls in
// flight and keeps the highest count: each call waits (up to a deadline)
// until `width` calls are in flight, so that a concurrency above width
// shows at once and one of width is reached.
type concurrencyTool struct {
	width     int64
	cur, peak atomic.Int64
	calls     atomic.Int64
}

func (c *concurrencyTool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.cur.Add(1)
	c.calls.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	for deadline := time.Now().Add(2 * time.Second); c.cur.Load() < c.width && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // polls the condition
	}
	c.cur.Add(-1)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
}

// TestMCPBatchLimits (issue 21 finding 3): a JSON-RPC batch on /mcp is
// refused on sessions of 2025-06-18 and later (which removed batching),
// over TOOLROUTER's batch cap (1,024, as POST /route/batch) cleanly, and an
// allowed one runs at most TOOLROUTER_BATCH_CONCURRENCY calls at once.
func TestMCPBatchLimits(t *testing.T) {
	tool := &concurrencyTool{width: 3}
	srv := httptest.NewServer(tool)
	t.Cleanup(srv.Close)
	rt, _ := startRouter(t, `
tools:
  - name: count
    description: Counts the calls in flight.
    endpoint: `+srv.URL+`
    input_schema: {type: object}
`, "TOOLROUTER_BATCH_CONCURRENCY=3")
	batch := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count","arguments":{}}}`, i+1)
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	refused := func(what string, r mcpRaw) {
		t.Helper()
		if _, code, msg := r.rpc(t); r.Status != http.StatusBadRequest || code != -32600 {
			t.Errorf("%s: %d, code %d %q; want 400 with an invalid-request error", what, r.Status, code, msg)
		}
	}
	// 2025-11-25 negotiated, even without the MCP-Protocol-Version header.
	modern := mcpSession(t, rt.URL(), "2025-11-25")
	refused("a batch on 2025-11-25", mcpPost(t, rt.URL(), modern, batch(2), "Mcp-Protocol-Version", ""))
	old := mcpSession(t, rt.URL(), "2025-03-26")
	refused("1,025 calls", mcpPost(t, rt.URL(), old, batch(1025), "Mcp-Protocol-Version", ""))
	if tool.calls.Load() != 0 {
		t.Fatalf("a refused batch reached the tool %d times", tool.calls.Load())
	}

	r := mcpPost(t, rt.URL(), old, batch(24), "Mcp-Protocol-Version", "")
	var answers []map[string]any
	for _, ev := range r.Events {
		var one []map[string]any
		if json.Unmarshal(ev, &one) != nil {
			one = []map[string]any{{}}
			_ = json.Unmarshal(ev, &one[0])
		}
		answers = append(answers, one...)
	}
	if r.Status != http.StatusOK || len(answers) != 24 {
		t.Fatalf("a batch of 24: %d, %d answers: %s", r.Status, len(answers), r.Events)
	}
	for _, a := range answers {
		if res, _ := a["result"].(map[string]any); res == nil || res["isError"] == true {
			t.Errorf("answer %v", a)
		}
	}
	if tool.calls.Load() != 24 || tool.peak.Load() != 3 {
		t.Errorf("the tool saw %d calls, at most %d at once; want 24, at most 3", tool.calls.Load(), tool.peak.Load())
	}
}

// TestMCPTerminatedSession (issue 21 finding 10): once DELETE answered, the
// session's id is 404 on every replica sharing the store, whichever
// replica the DELETE reached.
func TestMCPTerminatedSession(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	db := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	reps := startReplicas(t, 2, exampleRegistry(t, tools.addr), db)
	a, b := reps[0].URL(), reps[1].URL()
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	gone := func(what string, r mcpRaw) {
		t.Helper()
		if r.Status != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", what, r.Status, r.Body)
		}
	}
	for _, deleteAt := range []string{a, b} {
		tok := mcpSession(t, a, "2025-11-25")
		for _, url := range []string{a, b} {
			if r := mcpPost(t, url, tok, list); r.Status != http.StatusOK {
				t.Fatalf("the open session: %d %s", r.Status, r.Body)
			}
		}
		if r := mcpSend(t, http.MethodDelete, deleteAt, tok, ""); r.Status/100 != 2 {
			t.Fatalf("DELETE: %d %s", r.Status, r.Body)
		}
		for _, url := range []string{a, b} {
			gone("tools/list after DELETE", mcpPost(t, url, tok, list))
			gone("tools/call after DELETE", mcpPost(t, url, tok, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test/echo","arguments":{}}}`))
			gone("DELETE again", mcpSend(t, http.MethodDelete, url, tok, ""))
		}
	}
}

// TestMCPForgedRequestState (issue 21 finding 6): a requestState whose
// client field another client rewrote is refused, and reaches no backend:
// the forger's plan takes no sequence.
func TestMCPForgedRequestState(t *testing.T) {
	t.Parallel()
	fix := startFixture(t)
	rt, _ := startRouter(t, fmt.Sprintf("mcp_servers:\n  - name: fixture\n    url: %s/mcp\n    prefix: \"\"\n", fix.URL()),
		"TOOLROUTER_API_KEYS=alpha-key,bob-key")
	waitToolsAs(t, rt, "alpha-key", "test_input_required_result_multi_round")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(key string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rt.URL() + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	alpha, bob := dial("alpha-key"), dial("bob-key")
	r1, err := alpha.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_multi_round", Arguments: map[string]any{}})
	if err != nil || !r1.NeedsInput() {
		t.Fatalf("round 1: %v %+v", err, r1)
	}
	// Rewrite the client field ("c") of alpha's state to bob's name.
	prefix, rest, _ := strings.Cut(r1.RequestState, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatalf("requestState %q: %v", r1.RequestState, err)
	}
	var w map[string]any
	if err := json.Unmarshal(raw, &w); err != nil || w["c"] != "key-1" {
		t.Fatalf("requestState payload %s: want the client field c = key-1", raw)
	}
	w["c"] = "key-2"
	raw, _ = json.Marshal(w)
	forged := prefix + "." + base64.RawURLEncoding.EncodeToString(raw)
	answers := mcp.InputResponseMap{"step1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bob"}}}
	for _, state := range []string{forged + "." + sig, forged, "trs1." + base64.RawURLEncoding.EncodeToString(raw)} {
		_, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_multi_round", Arguments: map[string]any{},
			InputResponses: answers, RequestState: state})
		if err == nil || !strings.Contains(err.Error(), "requestState") {
			t.Errorf("forged state %q: err %v, want an invalid-params error naming requestState", state, err)
		}
	}
	// Bob's plan took no sequence: nothing was routed.
	res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err != nil || res.Meta["toolrouter/sequence"] != float64(0) {
		t.Errorf("bob's first routed call: %v, _meta %v; want sequence 0", err, res.Meta)
	}
	// Alpha's own retry still works.
	r2, err := alpha.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_multi_round", Arguments: map[string]any{},
		InputResponses: answers, RequestState: r1.RequestState})
	if err != nil || !r2.NeedsInput() {
		t.Errorf("alpha's retry: %v %+v", err, r2)
	}
}

// waitToolsAs waits until the client of key sees every tool of want on
// /mcp.
func waitToolsAs(t *testing.T, rt *proc, key string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := mcpPost(t, rt.URL(), "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			"Authorization", "Bearer "+key, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")
		missing := ""
		for _, name := range want {
			if !strings.Contains(string(r.Body), `"`+name+`"`) {
				missing = name
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listed: %d %s", missing, r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMCPSessionCapUnderConcurrentInitialize (issue 21 finding 1): 16
// concurrent loops of initialize from one client open at most the cap of
// 1,000 sessions, every one of which answers its owner; meanwhile another
// client's fresh sessions all answer their first request.
func TestMCPSessionCapUnderConcurrentInitialize(t *testing.T) {
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr), "TOOLROUTER_API_KEYS=hammer-key,other-key", "TOOLROUTER_LOG_LEVEL=warn")
	var mu sync.Mutex
	var toks []string
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r := mcpPost(t, rt.URL(), "", initializeBody, "Authorization", "Bearer hammer-key")
				if r.Status != http.StatusOK {
					if r.Status != http.StatusServiceUnavailable {
						t.Errorf("initialize: %d %s", r.Status, r.Body)
					}
					return
				}
				mu.Lock()
				toks = append(toks, r.Header.Get("Mcp-Session-Id"))
				mu.Unlock()
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	lost := 0
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			if i < 150 {
				tok := mcpSession(t, rt.URL(), "2025-11-25", "Authorization", "Bearer other-key")
				if r := mcpPost(t, rt.URL(), tok, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Authorization", "Bearer other-key"); r.Status != http.StatusOK {
					lost++
				}
				continue
			}
			<-done
		}
		break
	}
	if lost > 0 {
		t.Errorf("%d of the other client's fresh sessions answered their first request with an error", lost)
	}
	if len(toks) > 1000 {
		t.Errorf("%d sessions opened past the cap of 1,000", len(toks))
	}
	unusable := 0
	for _, tok := range toks {
		if r := mcpPost(t, rt.URL(), tok, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "Authorization", "Bearer hammer-key"); r.Status != http.StatusOK {
			unusable++
		}
	}
	t.Logf("%d sessions opened (cap 1,000), %d unusable; the other client lost %d", len(toks), unusable, lost)
	if unusable > 0 {
		t.Errorf("%d open sessions answer their owner with an error", unusable)
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
