package exampletools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// do serves one request with Handler() and returns the recorded reply.
func do(t *testing.T, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec
}

// decode parses a JSON object reply and checks its Content-Type.
func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("reply %q is not a JSON object: %v", rec.Body.String(), err)
	}
	return m
}

// wantError checks the status and that the reply's "error" starts with prefix.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, prefix string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d (body %q)", rec.Code, status, rec.Body.String())
	}
	m := decode(t, rec)
	msg, _ := m["error"].(string)
	if !strings.HasPrefix(msg, prefix) {
		t.Fatalf("error = %q, want prefix %q", msg, prefix)
	}
}

func TestEcho(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"msg":"hi"}`,
		"{ \"msg\" : \"spaced\",\n  \"n\": 1.50, \"nested\": {\"a\": [1, 2, null]} }\n",
		`{}`,
		`[1,2,3]`,
		`"just a string"`,
		`{"unicode":"héllo \u00e9 ✓"}`,
	} {
		rec := do(t, http.MethodPost, "/echo", body, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("echo %q: status %d, body %q", body, rec.Code, rec.Body.String())
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("echo %q: Content-Type %q", body, ct)
		}
		if got := rec.Body.String(); got != body {
			t.Fatalf("echo changed the body: got %q, want %q", got, body)
		}
	}
}

func TestEchoInvalidJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"msg":`, `not json`, ``, `   `, `{"a":1}{"b":2}`} {
		rec := do(t, http.MethodPost, "/echo", body, nil)
		wantError(t, rec, http.StatusBadRequest, "invalid JSON body: ")
	}
}

func TestAdd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		sum  float64
	}{
		{`{"a": 1, "b": 2}`, 3},
		{`{"a": 1.5, "b": -0.25}`, 1.25},
		{`{"a": -7, "b": 7}`, 0},
		{`{"a": 1e3, "b": 2, "sandbox_root": "/tmp", "resource_bindings": {}}`, 1002},
	} {
		rec := do(t, http.MethodPost, "/add", tc.body, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("add %s: status %d, body %q", tc.body, rec.Code, rec.Body.String())
		}
		m := decode(t, rec)
		if len(m) != 1 || m["sum"] != tc.sum {
			t.Fatalf("add %s = %v, want {sum: %v}", tc.body, m, tc.sum)
		}
	}
}

func TestAddErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, want string
	}{
		{`{"b": 2}`, "schema: 'a' must be a number"},
		{`{"a": 1}`, "schema: 'b' must be a number"},
		{`{}`, "schema: 'a' must be a number"},
		{``, "schema: 'a' must be a number"},
		{`{"a": "1", "b": 2}`, "schema: 'a' must be a number"},
		{`{"a": 1, "b": null}`, "schema: 'b' must be a number"},
		{`{"a": 1, "b": true}`, "schema: 'b' must be a number"},
		{`{"a": 1, "b": [2]}`, "schema: 'b' must be a number"},
		{`{"a": 1e400, "b": 1}`, "schema: 'a' is out of range"},
		{`{"a": 1.7e308, "b": 1.7e308}`, "schema: the sum of 'a' and 'b' is out of range"},
		{`[1, 2]`, "schema: the arguments must be a JSON object"},
		{`{"a": 1,`, "invalid JSON body: "},
	} {
		rec := do(t, http.MethodPost, "/add", tc.body, nil)
		wantError(t, rec, http.StatusBadRequest, tc.want)
	}
}

func TestValidatePassAndFail(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{}`, ``, `{"value": "anything"}`} {
		rec := do(t, http.MethodPost, "/validate/pass", body, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("/validate/pass %q: status %d", body, rec.Code)
		}
		m := decode(t, rec)
		if m["passed"] != true || m["checks"] != float64(1) {
			t.Fatalf("/validate/pass = %v", m)
		}

		rec = do(t, http.MethodPost, "/validate/fail", body, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("/validate/fail %q: status %d", body, rec.Code)
		}
		m = decode(t, rec)
		if m["passed"] != false || m["reason"] != "value did not satisfy the check" {
			t.Fatalf("/validate/fail = %v", m)
		}
	}
	wantError(t, do(t, http.MethodPost, "/validate/pass", `{`, nil), http.StatusBadRequest, "invalid JSON body: ")
	wantError(t, do(t, http.MethodPost, "/validate/fail", `[]`, nil), http.StatusBadRequest, "schema: ")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body   string
		passed bool
		reason string
	}{
		{`{"value": "ok"}`, true, ""},
		{`{"value": " "}`, true, ""},
		{`{"value": ""}`, false, "'value' must be a non-empty string"},
		{`{"value": 3}`, false, "'value' must be a string"},
		{`{"value": ["a"]}`, false, "'value' must be a string"},
		{`{"value": null}`, false, "'value' is missing"},
		{`{}`, false, "'value' is missing"},
		{``, false, "'value' is missing"},
	} {
		rec := do(t, http.MethodPost, "/validate", tc.body, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("/validate %s: status %d", tc.body, rec.Code)
		}
		m := decode(t, rec)
		if m["passed"] != tc.passed {
			t.Fatalf("/validate %s: passed = %v, want %v", tc.body, m["passed"], tc.passed)
		}
		if tc.passed {
			if _, has := m["reason"]; has {
				t.Fatalf("/validate %s: a pass has a reason: %v", tc.body, m)
			}
		} else if m["reason"] != tc.reason {
			t.Fatalf("/validate %s: reason = %v, want %q", tc.body, m["reason"], tc.reason)
		}
	}
	wantError(t, do(t, http.MethodPost, "/validate", `{"value":`, nil), http.StatusBadRequest, "invalid JSON body: ")
}

func TestFail(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{}`, `{"x": 1}`, ``} {
		rec := do(t, http.MethodPost, "/fail", body, nil)
		wantError(t, rec, http.StatusInternalServerError, "RuntimeError: boom")
		if m := decode(t, rec); m["error"] != "RuntimeError: boom" {
			t.Fatalf("/fail error = %v", m["error"])
		}
	}
}

func TestSlow(t *testing.T) {
	t.Parallel()
	body := `{"ms": 50, "msg": "later"}`
	start := time.Now()
	rec := do(t, http.MethodPost, "/slow", body, nil)
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Fatalf("/slow answered after %v, want at least 50ms", elapsed)
	}
	if rec.Code != http.StatusOK || rec.Body.String() != body {
		t.Fatalf("/slow = %d %q, want 200 %q", rec.Code, rec.Body.String(), body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}

	if g := do(t, http.MethodPost, "/greet", `{"name": "World"}`, nil); g.Code != http.StatusOK || strings.TrimSpace(g.Body.String()) != `"Hello, World!"` {
		t.Fatalf("/greet = %d %q", g.Code, g.Body.String())
	}
	if rec = do(t, http.MethodPost, "/slow", `{"seconds": 0, "label": "x"}`, nil); rec.Code != http.StatusOK {
		t.Fatalf("/slow seconds=0 = %d %q", rec.Code, rec.Body.String())
	}
	rec = do(t, http.MethodPost, "/slow", `{"ms": 0}`, nil)
	if rec.Code != http.StatusOK || rec.Body.String() != `{"ms": 0}` {
		t.Fatalf("/slow ms=0 = %d %q", rec.Code, rec.Body.String())
	}
}

func TestSlowDefault(t *testing.T) {
	t.Parallel()
	start := time.Now()
	rec := do(t, http.MethodPost, "/slow", ``, nil)
	if elapsed := time.Since(start); elapsed < DefaultSlowMS*time.Millisecond {
		t.Fatalf("/slow without ms answered after %v, want at least %dms", elapsed, DefaultSlowMS)
	}
	if rec.Code != http.StatusOK || rec.Body.String() != `{}` {
		t.Fatalf("/slow = %d %q, want 200 {}", rec.Code, rec.Body.String())
	}
}

func TestSlowErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{`{"ms": -1}`, "schema: 'ms' must be between 0 and 60000"},
		{`{"ms": 60001}`, "schema: 'ms' must be between 0 and 60000"},
		{`{"ms": "10"}`, "schema: 'ms' must be a number"},
		{`{"ms": 1`, "invalid JSON body: "},
	} {
		wantError(t, do(t, http.MethodPost, "/slow", tc.body, nil), http.StatusBadRequest, tc.want)
	}
}

func TestSlowHonoursCancellation(t *testing.T) {
	t.Parallel()
	// In a synctest bubble, Wait returns once the handler is blocked in
	// its 60 s wait, and only cancellation, not the bubble's clock, may end it.
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/slow", strings.NewReader(`{"ms": 60000}`))
		rec := httptest.NewRecorder()
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			Handler().ServeHTTP(rec, req)
		}()
		synctest.Wait()
		cancel()
		<-done
		if d := time.Since(start); d != 0 {
			t.Fatalf("/slow returned after %v of its 60s, not on cancellation", d)
		}
		if rec.Body.Len() != 0 {
			t.Fatalf("/slow wrote %q after cancellation", rec.Body.String())
		}
	})
}

func TestContext(t *testing.T) {
	t.Parallel()
	body := `{"msg": "hi", "n": [1, 2]}`
	rec := do(t, http.MethodPost, "/context", body, map[string]string{
		HeaderPlanID:         "plan_123",
		HeaderToolCallID:     "tc_abc",
		HeaderIdempotencyKey: "tc_abc",
	})
	if rec.Code != http.StatusOK {
		t.Fatalf("/context status %d, body %q", rec.Code, rec.Body.String())
	}
	m := decode(t, rec)
	if m["plan_id"] != "plan_123" || m["tool_call_id"] != "tc_abc" || m["idempotency_key"] != "tc_abc" {
		t.Fatalf("/context = %v", m)
	}
	args, _ := json.Marshal(m["arguments"])
	if string(args) != `{"msg":"hi","n":[1,2]}` {
		t.Fatalf("/context arguments = %s", args)
	}

	// Without the headers and the body: empty strings and {}.
	rec = do(t, http.MethodPost, "/context", ``, nil)
	m = decode(t, rec)
	if m["plan_id"] != "" || m["tool_call_id"] != "" || m["idempotency_key"] != "" {
		t.Fatalf("/context without headers = %v", m)
	}
	if a, ok := m["arguments"].(map[string]any); !ok || len(a) != 0 {
		t.Fatalf("/context arguments without a body = %v", m["arguments"])
	}
	wantError(t, do(t, http.MethodPost, "/context", `{"a"`, nil), http.StatusBadRequest, "invalid JSON body: ")
}

func TestBigSmall(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 10, bigChunkSize - 1, bigChunkSize, 3*bigChunkSize + 7} {
		rec := do(t, http.MethodPost, "/big", `{"bytes": `+strconv.Itoa(n)+`}`, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("/big %d: status %d", n, rec.Code)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("/big %d: Content-Type %q", n, ct)
		}
		if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(n+2) {
			t.Fatalf("/big %d: Content-Length %q", n, cl)
		}
		var s string
		if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatalf("/big %d: reply is not a JSON string: %v", n, err)
		}
		if len(s) != n || strings.Trim(s, "x") != "" {
			t.Fatalf("/big %d: got a string of %d bytes", n, len(s))
		}
	}
}

func TestBigErrors(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"bytes": -1}`, `{"bytes": 1.5}`, `{"bytes": 1073741825}`} {
		wantError(t, do(t, http.MethodPost, "/big", body, nil), http.StatusBadRequest,
			"schema: 'bytes' must be an integer between 0 and 1073741824")
	}
	wantError(t, do(t, http.MethodPost, "/big", `{"bytes": "10"}`, nil), http.StatusBadRequest, "schema: 'bytes' must be a number")
	wantError(t, do(t, http.MethodPost, "/big", `{`, nil), http.StatusBadRequest, "invalid JSON body: ")
}

// countingWriter is a ResponseWriter that keeps nothing but a count.
type countingWriter struct {
	header http.Header
	status int
	n      int64
	first  []byte
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(s int)   { w.status = s }
func (w *countingWriter) Write(p []byte) (int, error) {
	if len(w.first) < 16 {
		w.first = append(w.first, p[:min(len(p), 16-len(w.first))]...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

// TestBigDoesNotAllocateItsSize serves the default 64 MiB reply into a writer that keeps
// nothing and checks that the handler allocated a small fraction of that.
func TestBigDoesNotAllocateItsSize(t *testing.T) {
	// Not parallel: the allocation count is process-wide.
	h := Handler()
	w := &countingWriter{header: http.Header{}}
	req := httptest.NewRequest(http.MethodPost, "/big", strings.NewReader(`{}`))

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	h.ServeHTTP(w, req)
	runtime.ReadMemStats(&after)

	if w.status != http.StatusOK {
		t.Fatalf("status %d", w.status)
	}
	if w.n != DefaultBigBytes+2 {
		t.Fatalf("wrote %d bytes, want %d", w.n, DefaultBigBytes+2)
	}
	if string(w.first) != `"xxxxxxxxxxxxxxx` {
		t.Fatalf("reply starts %q", w.first)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > DefaultBigBytes/8 {
		t.Fatalf("/big allocated %d bytes for a %d-byte reply: it does not stream", alloc, DefaultBigBytes)
	}
}

// TestBigStreams reads the first bytes of a 1 GiB reply over a real connection, closes it,
// and checks that the handler stops instead of producing the rest.
func TestBigStreams(t *testing.T) {
	t.Parallel()
	handlerDone := make(chan struct{})
	inner := Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if r.URL.Path == "/big" {
			close(handlerDone)
		}
	}))
	defer srv.Close()

	resp, err := srv.Client().Post(srv.URL+"/big", "application/json", strings.NewReader(`{"bytes": 1073741824}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if resp.ContentLength != 1<<30+2 {
		t.Fatalf("Content-Length %d", resp.ContentLength)
	}
	head := make([]byte, 4096)
	if _, err := io.ReadFull(bufio.NewReader(resp.Body), head); err != nil {
		t.Fatal(err)
	}
	if head[0] != '"' || strings.Trim(string(head[1:]), "x") != "" {
		t.Fatalf("reply starts %q", head[:32])
	}
	select {
	case <-handlerDone:
		t.Fatal("the first bytes arrived only after the handler had finished: /big does not stream")
	default:
	}
	_ = resp.Body.Close() // not read to the end: the connection is closed

	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("/big kept writing after the client went away")
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	tooBig := `{"msg": "` + strings.Repeat("a", MaxBodyBytes) + `"}`
	for _, path := range []string{"/echo", "/add", "/validate", "/validate/pass", "/validate/fail", "/fail", "/slow", "/context", "/big"} {
		rec := do(t, http.MethodPost, path, tooBig, nil)
		wantError(t, rec, http.StatusRequestEntityTooLarge, "request body too large")
	}
	// Exactly the limit is accepted.
	atLimit := `{"msg": "` + strings.Repeat("a", MaxBodyBytes-len(`{"msg": ""}`)) + `"}`
	rec := do(t, http.MethodPost, "/echo", atLimit, nil)
	if rec.Code != http.StatusOK || rec.Body.Len() != MaxBodyBytes {
		t.Fatalf("body of exactly %d bytes: status %d, echoed %d bytes", MaxBodyBytes, rec.Code, rec.Body.Len())
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	rec := do(t, http.MethodGet, "/healthz", "", nil)
	if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Fatalf("/healthz = %d %q", rec.Code, rec.Body.String())
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/echo", http.StatusMethodNotAllowed},
		{http.MethodGet, "/add", http.StatusMethodNotAllowed},
		{http.MethodPut, "/validate", http.StatusMethodNotAllowed},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed},
		{http.MethodPost, "/nope", http.StatusNotFound},
		{http.MethodPost, "/validate/other", http.StatusNotFound},
	} {
		rec := do(t, tc.method, tc.path, `{}`, nil)
		if rec.Code != tc.status {
			t.Fatalf("%s %s = %d, want %d", tc.method, tc.path, rec.Code, tc.status)
		}
	}
}

// TestExampleRegistryEndpointsExist checks that every endpoint of every examples/registry*.yaml
// is a POST route of Handler() on the address `make run` serves it on.
func TestExampleRegistryEndpointsExist(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/registry*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("examples/registry*.yaml: %v %v, want the example and its three variations", files, err)
	}
	mux, ok := Handler().(*http.ServeMux)
	if !ok {
		t.Fatalf("Handler() is a %T, not a *http.ServeMux", Handler())
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		endpoints := regexp.MustCompile(`(?m)^\s*endpoint:\s*(\S+)`).FindAllStringSubmatch(string(b), -1)
		if len(endpoints) < 7 {
			t.Fatalf("found %d endpoints in %s, want 7 or more", len(endpoints), file)
		}
		for _, m := range endpoints {
			u := m[1]
			path, ok := strings.CutPrefix(u, "http://127.0.0.1:9001/")
			if !ok {
				t.Fatalf("%s: endpoint %s is not on http://127.0.0.1:9001", file, u)
			}
			req := httptest.NewRequest(http.MethodPost, "/"+path, nil)
			if _, pattern := mux.Handler(req); pattern != "POST /"+path {
				t.Fatalf("%s: endpoint %s: matched pattern %q, want %q", file, u, pattern, "POST /"+path)
			}
		}
	}
}

// TestApprovalsExampleTools: the tools examples/registry-approvals.yaml
// names answer as docs/approvals.md shows, and name a missing argument.
func TestApprovalsExampleTools(t *testing.T) {
	t.Parallel()
	rec := do(t, http.MethodPost, "/refund", `{"to": "acct-7", "amount": 12.5}`, nil)
	if m := decode(t, rec); rec.Code != http.StatusOK || m["refunded"] != 12.5 || m["to"] != "acct-7" {
		t.Errorf("/refund: %d %v", rec.Code, m)
	}
	wantError(t, do(t, http.MethodPost, "/refund", `{"amount": 12.5}`, nil), http.StatusBadRequest, "schema: 'to' must be a non-empty string")
	wantError(t, do(t, http.MethodPost, "/refund", `{"to": "a"}`, nil), http.StatusBadRequest, "schema: 'amount' must be a number")
	rec = do(t, http.MethodPost, "/kb/search", `{"query": "REFUND"}`, nil)
	if got := rec.Body.String(); rec.Code != http.StatusOK || got != `{"articles":[{"id":"kb-1","title":"Refunds for damaged orders"}]}` {
		t.Errorf("/kb/search: %d %q", rec.Code, got)
	}
	rec = do(t, http.MethodPost, "/kb/delete", `{"id": "kb-2"}`, nil)
	if m := decode(t, rec); rec.Code != http.StatusOK || m["deleted"] != "kb-2" {
		t.Errorf("/kb/delete: %d %v", rec.Code, m)
	}
	wantError(t, do(t, http.MethodPost, "/kb/delete", `{}`, nil), http.StatusBadRequest, "schema: 'id' must be a non-empty string")
}

func TestProgress(t *testing.T) {
	rec := do(t, http.MethodPost, "/progress", `{"steps": 2, "ms": 0}`, nil)
	want := "event: progress\ndata: {\"progress\":1,\"total\":2,\"message\":\"step 1 of 2\"}\n\n" +
		"event: progress\ndata: {\"progress\":2,\"total\":2,\"message\":\"step 2 of 2\"}\n\n" +
		"event: result\ndata: {\"steps\":2}\n\n"
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/event-stream" || rec.Body.String() != want {
		t.Fatalf("/progress = %d %s %q, want 200 text/event-stream %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), want)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"steps": -1}`, "schema: 'steps'"},
		{`{"steps": 1.5}`, "schema: 'steps'"},
		{`{"steps": 1001}`, "schema: 'steps'"},
		{`{"ms": 60001}`, "schema: 'ms'"},
		{`{"steps": "2"}`, "schema: 'steps'"},
	} {
		wantError(t, do(t, http.MethodPost, "/progress", tc.body, nil), http.StatusBadRequest, tc.want)
	}
}

// The stream /progress sends is one toolrouterd's HTTP tool client reads:
// its progress arrives in order, then its result.
func TestProgressThroughTheToolClient(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	c := remote.New(remote.Options{})
	defer c.CloseIdle()
	var got []string
	out := c.Call(context.Background(), toolrouter.ExecRequest{
		Tool: &toolrouter.Tool{Name: "progress", Endpoint: srv.URL + "/progress", Timeout: 10 * time.Second},
		Args: map[string]any{"steps": 3, "ms": 0},
		Progress: func(progress, total float64, message string) {
			got = append(got, fmt.Sprintf("%g/%g %s", progress, total, message))
		},
	})
	if out.Err != "" || string(out.Output) != `{"steps":3}` {
		t.Fatalf("outcome = %q %q", out.Output, out.Err)
	}
	if s := strings.Join(got, "|"); s != "1/3 step 1 of 3|2/3 step 2 of 3|3/3 step 3 of 3" {
		t.Fatalf("progress = %q", s)
	}
}
