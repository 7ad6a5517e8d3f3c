package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fixture is one recorded provider tool call (internal/format/testdata).
type fixture struct {
	ID       string         `json:"id"`
	Format   string         `json:"format"`
	ToolCall map[string]any `json:"tool_call"`
	Expect   struct {
		ToolName  string         `json:"tool_name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"expect"`
}

func loadFixtures(t *testing.T) []fixture {
	t.Helper()
	raw, err := os.ReadFile("../internal/format/testdata/toolcalls.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx []fixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	return fx
}

// TestRealPayloadsReachTheTool routes every recorded provider tool call
// through the real binary to a real echo endpoint registered under the
// call's own tool name, and checks the tool received exactly the decoded
// arguments as its JSON body.
func TestRealPayloadsReachTheTool(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	fx := loadFixtures(t)
	names := map[string]bool{}
	var reg strings.Builder
	reg.WriteString("tools:\n")
	for _, f := range fx {
		if names[f.Expect.ToolName] {
			continue
		}
		names[f.Expect.ToolName] = true
		fmt.Fprintf(&reg, "  - name: %q\n    endpoint: %s/echo\n", f.Expect.ToolName, tools.URL())
	}
	rt, _ := startRouter(t, reg.String())
	for _, f := range fx {
		t.Run(f.ID, func(t *testing.T) {
			resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "fixtures", "tool_call": f.ToolCall})
			if resp.Status != 200 {
				t.Fatalf("status %d: %s", resp.Status, resp.Body)
			}
			res := resp.JSON(t)
			if res["success"] != true {
				t.Fatalf("not successful: %s", resp.Body)
			}
			if res["tool_name"] != f.Expect.ToolName {
				t.Errorf("tool_name %v, want %s", res["tool_name"], f.Expect.ToolName)
			}
			if !reflect.DeepEqual(res["arguments"], f.Expect.Arguments) {
				t.Errorf("arguments %v, want %v", res["arguments"], f.Expect.Arguments)
			}
			// The echo tool answers with the body it received.
			if !reflect.DeepEqual(res["output"], f.Expect.Arguments) {
				t.Errorf("the tool received %v, want %v", res["output"], f.Expect.Arguments)
			}
		})
	}
}

// TestParallelCallsBatch routes the two parallel calls of one recorded
// OpenAI turn and one Anthropic turn as batches.
func TestParallelCallsBatch(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, fmt.Sprintf(`tools:
  - name: GetWeatherArgs
    endpoint: %[1]s/echo
  - name: get_stock_price
    endpoint: %[1]s/echo
  - name: retrieve_entity_info
    endpoint: %[1]s/echo
`, tools.URL()))
	calls := []any{
		map[string]any{"id": "call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "type": "function", "function": map[string]any{"name": "GetWeatherArgs", "arguments": `{"city":"Edinburgh","country":"UK","units":"c"}`}},
		map[string]any{"id": "call_h1DWI1POMJLb0KwIyQHWXD4p", "type": "function", "function": map[string]any{"name": "get_stock_price", "arguments": `{"ticker": "AAPL", "exchange": "NASDAQ"}`}},
		map[string]any{"id": "toolu_0167cfEnoQaPviGdVXA95zcu", "input": map[string]any{"name": "Alice"}, "name": "retrieve_entity_info", "type": "tool_use"},
		map[string]any{"id": "x", "type": "function", "function": map[string]any{"name": "nope", "arguments": "{}"}},
	}
	resp := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "batch-plan", "tool_calls": calls})
	if resp.Status != 200 {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	var out struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 4 {
		t.Fatalf("%d results, want 4", len(out.Results))
	}
	wantIDs := []string{"call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "call_h1DWI1POMJLb0KwIyQHWXD4p", "toolu_0167cfEnoQaPviGdVXA95zcu", "x"}
	for i, r := range out.Results {
		if r["provider_call_id"] != wantIDs[i] {
			t.Errorf("result %d: provider_call_id %v, want %s (input order)", i, r["provider_call_id"], wantIDs[i])
		}
		if r["sequence"] != float64(i) {
			t.Errorf("result %d: sequence %v, want %d", i, r["sequence"], i)
		}
	}
	if out.Results[3]["success"] != false || out.Results[3]["error_category"] != "not_found" {
		t.Errorf("missing tool: %v", out.Results[3])
	}
	pr := out.Results[0]["provider_result"].(map[string]any)
	if pr["role"] != "tool" || pr["tool_call_id"] != wantIDs[0] {
		t.Errorf("openai provider_result %v", pr)
	}
	pr = out.Results[2]["provider_result"].(map[string]any)
	if pr["type"] != "tool_result" || pr["tool_use_id"] != wantIDs[2] || pr["is_error"] != false {
		t.Errorf("anthropic provider_result %v", pr)
	}
	// An empty batch is an empty list.
	resp = do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "batch-plan", "tool_calls": []any{}})
	if resp.Status != 200 || strings.TrimSpace(string(resp.Body)) != `{"results":[]}` {
		t.Errorf("empty batch: %d %s", resp.Status, resp.Body)
	}
}

// TestBatchRunsConcurrently proves the calls of a batch run at the same
// time without timing anything: the tool holds every request until four are
// in flight at once (or gives up after a long while and fails them).
func TestBatchRunsConcurrently(t *testing.T) {
	t.Parallel()
	var inflight, peak atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 4 {
			once.Do(func() { close(all) })
		}
		select {
		case <-all:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		case <-time.After(20 * time.Second):
			w.WriteHeader(500)
		}
	}))
	defer tool.Close()
	rt, _ := startRouter(t, fmt.Sprintf("tools:\n  - name: barrier\n    endpoint: %s\n    timeout: 30s\n", tool.URL))
	call := map[string]any{"name": "barrier", "arguments": "{}"}
	resp := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "conc", "tool_calls": []any{call, call, call, call}})
	var out struct {
		Results []struct {
			Success bool `json:"success"`
		} `json:"results"`
	}
	json.Unmarshal(resp.Body, &out)
	for i, r := range out.Results {
		if !r.Success {
			t.Errorf("call %d failed: the batch did not run its calls concurrently (peak %d)", i, peak.Load())
		}
	}
	if peak.Load() != 4 {
		t.Errorf("peak concurrency %d, want 4", peak.Load())
	}
}

// faultyTools serves the ways a real tool endpoint goes wrong.
func faultyTools(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/sleep", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the caller hanging up
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	})
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		w.Write([]byte(`{"error":"RuntimeError: boom"}`))
	})
	mux.HandleFunc("/403", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(403)
		w.Write([]byte(`{"message":"token lacks scope files:write"}`))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat("a", 1<<20))
		w.Write([]byte(`"`))
		for i := 0; i < 64; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.Write([]byte(`"`))
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>oops</html>"))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestToolFailuresAreClassified: a tool that times out, resets the
// connection, answers 500, 403, 64 MiB or HTML gives a classified
// success:false result, never a 5xx, and the service stays healthy.
func TestToolFailuresAreClassified(t *testing.T) {
	t.Parallel()
	ft := faultyTools(t)
	closed := closedAddr(t)
	rt, _ := startRouter(t, fmt.Sprintf(`tools:
  - {name: t/sleep, endpoint: %[1]s/sleep, timeout: 300ms}
  - {name: t/reset, endpoint: %[1]s/reset}
  - {name: t/500, endpoint: %[1]s/500}
  - {name: t/403, endpoint: %[1]s/403}
  - {name: t/big, endpoint: %[1]s/big}
  - {name: t/html, endpoint: %[1]s/html}
  - {name: t/down, endpoint: "http://%[2]s/x"}
  - name: t/typed
    endpoint: %[1]s/500
    input_schema: {type: object, required: [n], properties: {n: {type: integer}}}
`, ft.URL, closed))
	cases := []struct {
		tool, category, errContains string
	}{
		{"t/sleep", "timeout", "timed out"},
		{"t/reset", "", ""},
		{"t/500", "execution", "boom"},
		{"t/403", "permission", "files:write"},
		{"t/big", "resource", "exceeds"},
		{"t/html", "parse", "non-JSON"},
		{"t/down", "resource", "unreachable"},
		{"t/typed", "schema", "/n"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			args := "{}"
			if c.tool == "t/typed" {
				args = `{"n":"seven"}`
			}
			resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "faults", "tool_call": map[string]any{"name": c.tool, "arguments": args}})
			if resp.Status != 200 {
				t.Fatalf("status %d: %s", resp.Status, resp.Body)
			}
			res := resp.JSON(t)
			if res["success"] != false {
				t.Fatalf("want success false: %s", resp.Body)
			}
			cat, _ := res["error_category"].(string)
			if cat == "" || c.category != "" && cat != c.category {
				t.Errorf("error_category %q, want %q", cat, c.category)
			}
			if msg, _ := res["error"].(string); !strings.Contains(msg, c.errContains) {
				t.Errorf("error %q does not contain %q", msg, c.errContains)
			}
		})
	}
	if resp := do(t, "GET", rt.URL()+"/healthz", nil); resp.Status != 200 {
		t.Errorf("healthz after faults: %d", resp.Status)
	}
}
