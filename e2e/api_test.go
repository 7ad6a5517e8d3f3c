package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBadRequestsAreProblems: malformed JSON, wrong types, missing fields
// and oversized bodies get 4xx problem+json naming the field; nothing 5xx.
func TestBadRequestsAreProblems(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr), "TOOLROUTER_MAX_BODY_BYTES=2048")
	huge := `{"plan_id":"p","tool_call":{"name":"test/echo","arguments":"` + strings.Repeat("x", 4096) + `"}}`
	cases := []struct {
		name, path, body string
		status           int
		detail           string
	}{
		{"malformed JSON", "/route", `{"plan_id": "p", "tool_call": {`, 400, "body"},
		{"not an object", "/route", `[1,2]`, 400, "dict"},
		{"empty body", "/route", ``, 400, "body"},
		{"tool_call not a dict", "/route", `{"plan_id":"p","tool_call":"x"}`, 400, "dict"},
		{"tool_call missing", "/route", `{"plan_id":"p"}`, 400, "tool_call"},
		{"plan_id missing", "/route", `{"tool_call":{}}`, 400, "plan_id"},
		{"plan_id empty", "/route", `{"plan_id":"","tool_call":{}}`, 400, "plan_id"},
		{"plan_id wrong type", "/route", `{"plan_id":7,"tool_call":{}}`, 400, "plan_id"},
		{"metadata wrong type", "/route", `{"plan_id":"p","tool_call":{},"provider_metadata":[1]}`, 400, "provider_metadata"},
		{"unknown field", "/route", `{"plan_id":"p","tool_call":{},"toolcall":{}}`, 400, "toolcall"},
		{"tool_calls not a list", "/route/batch", `{"plan_id":"p","tool_calls":{}}`, 400, "list"},
		{"batch item not a dict", "/route/batch", `{"plan_id":"p","tool_calls":[{},3]}`, 400, "tool_calls[1]"},
		{"oversized", "/route", huge, 413, "limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := do(t, "POST", rt.URL()+c.path, c.body)
			if resp.Status != c.status {
				t.Fatalf("status %d, want %d: %s", resp.Status, c.status, resp.Body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
			p := resp.JSON(t)
			if d, _ := p["detail"].(string); !strings.Contains(d, c.detail) {
				t.Errorf("detail %q does not name %q", d, c.detail)
			}
			if p["status"] != float64(c.status) || p["title"] == "" {
				t.Errorf("problem %v", p)
			}
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		resp := do(t, "POST", rt.URL()+"/route", `{"plan_id":"p","tool_call":{}}`, "Content-Type", "text/plain")
		if resp.Status != http.StatusUnsupportedMediaType {
			t.Errorf("status %d: %s", resp.Status, resp.Body)
		}
	})
	t.Run("a call without a name is a parse result", func(t *testing.T) {
		resp := do(t, "POST", rt.URL()+"/route", `{"plan_id":"p","tool_call":{"arguments":"{}"}}`)
		res := resp.JSON(t)
		if resp.Status != 200 || res["success"] != false || res["error_category"] != "parse" {
			t.Errorf("%d %s", resp.Status, resp.Body)
		}
	})
	t.Run("unparseable arguments are a parse result", func(t *testing.T) {
		resp := do(t, "POST", rt.URL()+"/route", `{"plan_id":"p","tool_call":{"name":"test/echo","arguments":"{not json"}}`)
		res := resp.JSON(t)
		if resp.Status != 200 || res["success"] != false || res["error_category"] != "parse" {
			t.Errorf("%d %s", resp.Status, resp.Body)
		}
	})
	t.Run("schemas: unknown provider and bad length", func(t *testing.T) {
		resp := do(t, "GET", rt.URL()+"/schemas/cohere", nil)
		if d, _ := resp.JSON(t)["detail"].(string); resp.Status != 404 || !strings.Contains(d, "openai") {
			t.Errorf("%d %s", resp.Status, resp.Body)
		}
		for _, q := range []string{"0", "-3", "abc"} {
			resp := do(t, "GET", rt.URL()+"/schemas/openai?max_description_length="+q, nil)
			if d, _ := resp.JSON(t)["detail"].(string); resp.Status != 400 || !strings.Contains(d, "max_description_length") {
				t.Errorf("%s: %d %s", q, resp.Status, resp.Body)
			}
		}
	})
}

// TestRouteIDsSequencesAndAliases: ids derive from plan and sequence, and a
// call under the alias /schemas/openai exports routes to the canonical tool.
func TestRouteIDsSequencesAndAliases(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr))
	resp := do(t, "GET", rt.URL()+"/schemas/openai", nil)
	if resp.Status != 200 {
		t.Fatalf("%d %s", resp.Status, resp.Body)
	}
	var alias string
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	for _, item := range resp.JSON(t)["tools"].([]any) {
		it := item.(map[string]any)
		fn := it["definition"].(map[string]any)["function"].(map[string]any)
		name := fn["name"].(string)
		if !pattern.MatchString(name) {
			t.Errorf("exported name %q breaks OpenAI's rule", name)
		}
		if it["name"] == "test/echo" {
			alias = name
		}
	}
	if alias == "" || alias == "test/echo" {
		t.Fatalf("no alias for test/echo: %s", resp.Body)
	}
	for i := 0; i < 3; i++ {
		resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "plan-001", "tool_call": map[string]any{
			"id": fmt.Sprintf("call_%d", i), "type": "function", "function": map[string]any{"name": alias, "arguments": `{"msg":"hi"}`}}})
		res := resp.JSON(t)
		if res["tool_name"] != "test/echo" || res["success"] != true {
			t.Fatalf("alias call: %s", resp.Body)
		}
		if res["sequence"] != float64(i) {
			t.Errorf("sequence %v, want %d", res["sequence"], i)
		}
		want := map[int]string{0: "tc_"}[i]
		if id, _ := res["tool_call_id"].(string); !strings.HasPrefix(id, want) || len(id) != 27 {
			t.Errorf("tool_call_id %q", id)
		}
		pr := res["provider_result"].(map[string]any)
		if pr["tool_call_id"] != fmt.Sprintf("call_%d", i) || pr["content"] != `{"msg":"hi"}` {
			t.Errorf("provider_result %v", pr)
		}
	}
}

// TestStreamingRoute: SSE updates in order, then the result.
func TestStreamingRoute(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr))
	status, events := stream(t, rt.URL()+"/route", map[string]any{"plan_id": "plan-020", "tool_call": map[string]any{"name": "test/echo", "arguments": `{"msg":"stream"}`}})
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	var got []string
	for _, e := range events {
		if e.Event == "update" {
			got = append(got, e.Data["status"].(string))
		} else {
			got = append(got, e.Event)
		}
	}
	if strings.Join(got, ",") != "pending,running,complete,result" {
		t.Errorf("events %v", got)
	}
	if last := events[len(events)-1]; last.Data["success"] != true || last.Data["output"].(map[string]any)["msg"] != "stream" {
		t.Errorf("result %v", last.Data)
	}
	status, _ = stream(t, rt.URL()+"/route", map[string]any{"plan_id": "plan-020", "tool_call": "nope"})
	if status != 400 {
		t.Errorf("non-dict streaming: status %d", status)
	}
}

// TestAuthAndOperations: API keys, request ids, metrics, the spec.
func TestAuthAndOperations(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	rt, _ := startRouter(t, exampleRegistry(t, tools.addr), "TOOLROUTER_API_KEYS=k1, k2")
	body := map[string]any{"plan_id": "ops", "tool_call": map[string]any{"name": "test/echo", "arguments": "{}"}}
	if resp := do(t, "POST", rt.URL()+"/route", body); resp.Status != 401 {
		t.Errorf("no key: %d", resp.Status)
	}
	if resp := do(t, "POST", rt.URL()+"/route", body, "Authorization", "Bearer wrong"); resp.Status != 401 {
		t.Errorf("wrong key: %d", resp.Status)
	}
	resp := do(t, "POST", rt.URL()+"/route", body, "Authorization", "Bearer k2", "X-Request-Id", "req-abc-123")
	if resp.Status != 200 {
		t.Fatalf("good key: %d %s", resp.Status, resp.Body)
	}
	if resp.Header.Get("X-Request-Id") != "req-abc-123" {
		t.Errorf("request id not echoed: %q", resp.Header.Get("X-Request-Id"))
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		if resp := do(t, "GET", rt.URL()+path, nil); resp.Status != 200 {
			t.Errorf("%s without a key: %d", path, resp.Status)
		}
	}
	metrics := string(do(t, "GET", rt.URL()+"/metrics", nil).Body)
	for _, want := range []string{
		`toolrouter_tool_calls_total{client="key-2",outcome="success",tool="test/echo"} 1`, // each API key is a client,
		`toolrouter_http_requests_total{method="POST",route="/route",status="401"} 2`,
		`toolrouter_http_request_duration_seconds_bucket`,
		`toolrouter_tool_call_duration_seconds_bucket`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if spec := string(do(t, "GET", rt.URL()+"/openapi.yaml", nil).Body); !strings.HasPrefix(spec, "openapi:") {
		t.Errorf("spec: %.60s", spec)
	}
	if out := rt.Output(); !strings.Contains(out, `"request_id":"req-abc-123"`) {
		t.Errorf("log lacks the request id:\n%s", out)
	}
	if strings.Contains(rt.Output(), "k2") {
		t.Errorf("an API key appears in the log")
	}
	// The container health check needs no shell or curl.
	hc := exec.Command(filepath.Join(binDir, "toolrouterd"), "healthcheck")
	hc.Env = append(os.Environ(), "TOOLROUTER_ADDR="+rt.addr)
	if out, err := hc.CombinedOutput(); err != nil {
		t.Errorf("healthcheck against a live server: %v %s", err, out)
	}
	hc = exec.Command(filepath.Join(binDir, "toolrouterd"), "healthcheck")
	hc.Env = append(os.Environ(), "TOOLROUTER_ADDR="+closedAddr(t))
	if err := hc.Run(); err == nil {
		t.Errorf("healthcheck passed with nothing listening")
	}
}

// TestHugeBodyIsRejectedWithoutBeingRead: a body far over the limit gets
// 413 and the server does not read it all (its memory stays small).
func TestHugeBodyIsRejectedWithoutBeingRead(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, "tools: []\n")
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"plan_id":"p","tool_call":{"name":"x","arguments":"`))
		chunk := []byte(strings.Repeat("x", 1<<20))
		for i := 0; i < 256; i++ { // 256 MiB, streamed
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Write([]byte(`"}}`))
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", rt.URL()+"/route", pr)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	resp.Body.Close()
	pr.CloseWithError(io.ErrClosedPipe)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
	metrics := string(do(t, "GET", rt.URL()+"/metrics", nil).Body)
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "process_resident_memory_bytes ") {
			var rss float64
			fmt.Sscanf(strings.TrimPrefix(line, "process_resident_memory_bytes "), "%g", &rss)
			if rss > 200<<20 {
				t.Errorf("resident memory %.0f MiB after a 256 MiB body", rss/(1<<20))
			}
		}
	}
}

// TestIdempotentReplay: a repeated Idempotency-Key returns the stored
// result without calling the tool again; another body or query with it is
// 422.
func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"n":%d}`, calls.Load())
	}))
	defer tool.Close()
	rt, _ := startRouter(t, fmt.Sprintf("tools:\n  - {name: count, endpoint: %s}\nvirtual_servers:\n  - {name: v, tools: [count]}\n", tool.URL))
	body := map[string]any{"plan_id": "idem", "tool_call": map[string]any{"name": "count", "arguments": "{}"}}
	first := do(t, "POST", rt.URL()+"/route", body, "Idempotency-Key", "k-1")
	again := do(t, "POST", rt.URL()+"/route", body, "Idempotency-Key", "k-1")
	if first.Status != 200 || again.Status != 200 {
		t.Fatalf("%d %d", first.Status, again.Status)
	}
	if again.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("replay header: first %q again %q", first.Header.Get("Idempotent-Replayed"), again.Header.Get("Idempotent-Replayed"))
	}
	if string(first.Body) != string(again.Body) || calls.Load() != 1 {
		t.Errorf("tool called %d times; bodies\n%s\n%s", calls.Load(), first.Body, again.Body)
	}
	other := map[string]any{"plan_id": "idem", "tool_call": map[string]any{"name": "count", "arguments": `{"x":1}`}}
	if resp := do(t, "POST", rt.URL()+"/route", other, "Idempotency-Key", "k-1"); resp.Status != 422 {
		t.Errorf("same key, other body: %d %s", resp.Status, resp.Body)
	}
	// The same body through a virtual server is another request.
	if resp := do(t, "POST", rt.URL()+"/route?server=v", body, "Idempotency-Key", "k-1"); resp.Status != 422 || calls.Load() != 1 {
		t.Errorf("same key, other query: %d %s (tool called %d times)", resp.Status, resp.Body, calls.Load())
	}
	// Without a key every request runs.
	do(t, "POST", rt.URL()+"/route", body)
	if calls.Load() != 2 {
		t.Errorf("calls %d, want 2", calls.Load())
	}
}

// TestParseFailureKeepsTheName: a call whose arguments do not parse still
// says which tool it was for.
func TestParseFailureKeepsTheName(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, "tools: []\n")
	for _, call := range []map[string]any{
		{"id": "c1", "type": "function", "function": map[string]any{"name": "math/add", "arguments": "{not json"}},
		{"name": "math/add", "args": []any{1, 2}},
	} {
		res := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": call}).JSON(t)
		if res["error_category"] != "parse" || res["tool_name"] != "math/add" {
			t.Errorf("%v → %v", call, res)
		}
	}
}

// TestIdempotencyKeysBelongToTheCaller: with API keys, the same
// Idempotency-Key from two clients is two different keys.
func TestIdempotencyKeysBelongToTheCaller(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer tool.Close()
	rt, _ := startRouter(t, fmt.Sprintf("tools:\n  - {name: count, endpoint: %s}\n", tool.URL), "TOOLROUTER_API_KEYS=alice-key,bob-key")
	body := map[string]any{"plan_id": "shared", "tool_call": map[string]any{"name": "count", "arguments": "{}"}}
	a := do(t, "POST", rt.URL()+"/route", body, "Authorization", "Bearer alice-key", "Idempotency-Key", "k")
	b := do(t, "POST", rt.URL()+"/route", body, "Authorization", "Bearer bob-key", "Idempotency-Key", "k")
	again := do(t, "POST", rt.URL()+"/route", body, "Authorization", "Bearer alice-key", "Idempotency-Key", "k")
	if b.Header.Get("Idempotent-Replayed") != "" || calls.Load() != 2 {
		t.Errorf("bob got alice's answer (calls %d)", calls.Load())
	}
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(a.Body) {
		t.Errorf("alice's own retry was not replayed")
	}
}

// TestIndexPointsTheWay: GET / (no key needed, even with keys set) answers
// links to the console, the OpenAPI document and health, each of which
// answers; other unknown paths stay 404.
func TestIndexPointsTheWay(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, "tools: []\n", "TOOLROUTER_API_KEYS=k1")
	resp := do(t, "GET", rt.URL()+"/", nil)
	links, _ := resp.JSON(t)["links"].(map[string]any)
	if resp.Status != 200 || links["console"] != "/ui" || links["openapi"] != "/openapi.yaml" || links["health"] != "/healthz" {
		t.Fatalf("GET /: %d %s", resp.Status, resp.Body)
	}
	for _, l := range links {
		r, err := http.Get(rt.URL() + l.(string))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("GET %s (linked from /): %d", l, r.StatusCode)
		}
	}
	if r := do(t, "GET", rt.URL()+"/nope", nil); r.Status != 404 {
		t.Errorf("GET /nope: %d, want 404", r.Status)
	}
}
