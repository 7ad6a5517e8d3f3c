package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const secret = "s3cr3t-token-value"

func newClient(t testing.TB, opts remote.Options) *remote.Client {
	t.Helper()
	c := remote.New(opts)
	t.Cleanup(c.CloseIdle)
	return c
}

// serve starts a tool server whose replies are application/json unless the
// handler says otherwise (net/http would sniff text/plain, which is not a
// JSON reply).
func serve(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newTool(endpoint string) *toolrouter.Tool {
	return &toolrouter.Tool{Name: "test/echo", Endpoint: endpoint, Kind: toolrouter.KindTool, Timeout: 5 * time.Second}
}

// echo answers with the request body, byte for byte.
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// closedPort returns an address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// resetConn hijacks the request's connection and closes it with SO_LINGER 0,
// so the client sees a reset.
func resetConn(t testing.TB, w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func assertFailure(t *testing.T, out toolrouter.Outcome, cat toolrouter.ErrorCategory) {
	t.Helper()
	if out.Success() {
		t.Fatalf("want failure %q, got success: %+v", cat, out)
	}
	if out.Category != cat {
		t.Errorf("category = %q, want %q (err %q)", out.Category, cat, out.Err)
	}
	if out.Output != nil {
		t.Errorf("output = %s, want nil on failure", out.Output)
	}
	if out.Err == "" {
		t.Error("failure without error text")
	}
	if strings.Contains(out.Err, secret) {
		t.Errorf("error text leaks a secret: %q", out.Err)
	}
}

func assertSuccess(t *testing.T, out toolrouter.Outcome) {
	t.Helper()
	if !out.Success() || out.Err != "" || out.Category != "" {
		t.Fatalf("want success, got %+v", out)
	}
}

func TestCallSendsArgumentsAndHeaders(t *testing.T) {
	var (
		gotBody   []byte
		gotHeader http.Header
		gotMethod string
	)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotMethod = r.Method
		gotHeader = r.Header.Clone()
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(gotBody)
	})
	tool := newTool(srv.URL + "/echo")
	tool.Headers = map[string]string{
		"Authorization":             "Bearer " + secret,
		"x-custom":                  "custom value",
		"X-Toolrouter-Plan-Id":      "forged",
		"idempotency-key":           "forged",
		"Content-Type":              "text/plain",
		"X-Toolrouter-Tool-Call-Id": "forged",
	}
	args := map[string]any{
		"msg":     "héllo wörld 世界 🚀",
		"html":    "<b>&amp;</b>",
		"n":       42,
		"f":       1.5,
		"nested":  map[string]any{"list": []any{1, "two", nil, true}},
		"escapes": "quote\" backslash\\ newline\n tab\t nul\x00",
	}
	want, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}

	c := newClient(t, remote.Options{})
	out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Args: args, PlanID: "plan-001", ToolCallID: "tc_0123456789abcdef01234567"})
	assertSuccess(t, out)

	if gotMethod != http.MethodPost {
		t.Errorf("method = %s, want POST", gotMethod)
	}
	if !bytes.Equal(gotBody, want) {
		t.Errorf("tool received\n%s\nwant\n%s", gotBody, want)
	}
	if !bytes.Equal(out.Output, want) {
		t.Errorf("output\n%s\nwant the echoed body\n%s", out.Output, want)
	}
	if out.Status != http.StatusOK || out.Attempts != 1 {
		t.Errorf("status %d attempts %d, want 200 and 1", out.Status, out.Attempts)
	}
	for k, v := range map[string]string{
		"Content-Type":              "application/json",
		"Accept":                    "application/json",
		"User-Agent":                "toolrouterd",
		"X-Toolrouter-Plan-Id":      "plan-001",
		"X-Toolrouter-Tool-Call-Id": "tc_0123456789abcdef01234567",
		"Idempotency-Key":           "tc_0123456789abcdef01234567",
		"Authorization":             "Bearer " + secret,
		"X-Custom":                  "custom value",
	} {
		if got := gotHeader.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("header %s = %q, want [%q]", k, got, v)
		}
	}
}

func TestCallNilArgsSendsEmptyObject(t *testing.T) {
	var got []byte
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
	assertSuccess(t, out)
	if string(got) != "{}" {
		t.Errorf("body = %q, want {}", got)
	}
}

func TestCallToolHeadersOverrideAcceptAndUserAgent(t *testing.T) {
	var got http.Header
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		_, _ = io.WriteString(w, `{}`)
	})
	tool := newTool(srv.URL)
	tool.Headers = map[string]string{"Accept": "application/vnd.tool+json", "User-Agent": "custom-agent"}
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Args: map[string]any{}})
	assertSuccess(t, out)
	if got.Get("Accept") != "application/vnd.tool+json" || got.Get("User-Agent") != "custom-agent" {
		t.Errorf("Accept %q User-Agent %q, want the tool's", got.Get("Accept"), got.Get("User-Agent"))
	}
	if got.Get("X-Toolrouter-Plan-Id") != "" || got.Get("Idempotency-Key") != "" {
		t.Errorf("empty ids must omit their headers, got %v", got)
	}
}

func TestCallOutputIsTheReplyAsReceived(t *testing.T) {
	const reply = "{\"b\": 1,   \"a\": [1, 2.50, \"\\u00e9\"]}\n"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, reply)
	})
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
	assertSuccess(t, out)
	if string(out.Output) != reply {
		t.Errorf("output %q, want %q unchanged", out.Output, reply)
	}
}

// serveBlocking starts a tool that never answers before the client gives
// up, after sending writeFirst (part of a reply) when it is not empty.
func serveBlocking(t *testing.T, writeFirst string) *httptest.Server {
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to its end lets the server notice the client
		// going away, which cancels r.Context().
		_, _ = io.Copy(io.Discard, r.Body)
		if writeFirst != "" {
			_, _ = io.WriteString(w, writeFirst)
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}

func TestCallTimeout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		writeFirst string // part of a reply sent before stalling
	}{
		{"no reply", ""},
		{"stalled body", `{"partial": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serveBlocking(t, tc.writeFirst)
			tool := newTool(srv.URL)
			tool.Timeout = 100 * time.Millisecond
			tool.Idempotent, tool.Retries = true, 3 // a timeout is never retried

			start := time.Now()
			out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
			elapsed := time.Since(start)

			assertFailure(t, out, toolrouter.CategoryTimeout)
			if out.Err != "tool timed out after 100ms" {
				t.Errorf("err = %q", out.Err)
			}
			if out.Attempts != 1 {
				t.Errorf("attempts = %d, want 1", out.Attempts)
			}
			if elapsed < 100*time.Millisecond || elapsed > time.Second {
				t.Errorf("call took %v, want about 100ms", elapsed)
			}
		})
	}
}

func TestCallDefaultTimeout(t *testing.T) {
	srv := serveBlocking(t, "")
	tool := newTool(srv.URL)
	tool.Timeout = 0
	out := newClient(t, remote.Options{DefaultTimeout: 150 * time.Millisecond}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	assertFailure(t, out, toolrouter.CategoryTimeout)
	if out.Err != "tool timed out after 150ms" {
		t.Errorf("err = %q", out.Err)
	}
}

func TestCallCallerContext(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		srv := serveBlocking(t, "")
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		out := newClient(t, remote.Options{}).Call(ctx, toolrouter.ExecRequest{Tool: newTool(srv.URL)})
		assertFailure(t, out, toolrouter.CategoryExecution)
		if out.Err != "call cancelled: context canceled" {
			t.Errorf("err = %q", out.Err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("cancelled call took %v", d)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		srv := serveBlocking(t, "")
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		out := newClient(t, remote.Options{}).Call(ctx, toolrouter.ExecRequest{Tool: newTool(srv.URL)})
		assertFailure(t, out, toolrouter.CategoryTimeout)
		if out.Err != "call cancelled: context deadline exceeded" {
			t.Errorf("err = %q", out.Err)
		}
	})
}

func TestCallConnectionReset(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { resetConn(t, w) })
	tool := newTool(srv.URL)
	tool.Headers = map[string]string{"Authorization": "Bearer " + secret}
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	assertFailure(t, out, toolrouter.CategoryExecution)
	if !strings.HasPrefix(out.Err, "tool request failed: ") {
		t.Errorf("err = %q", out.Err)
	}
	if out.Status != 0 || out.Attempts != 1 {
		t.Errorf("status %d attempts %d, want 0 and 1", out.Status, out.Attempts)
	}
}

func TestCallConnectionRefused(t *testing.T) {
	tool := newTool("http://" + closedPort(t) + "/tool?token=" + secret)
	tool.Headers = map[string]string{"Authorization": "Bearer " + secret}
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	assertFailure(t, out, toolrouter.CategoryResource)
	if !strings.HasPrefix(out.Err, "tool endpoint unreachable: ") || !strings.Contains(out.Err, "connection refused") {
		t.Errorf("err = %q", out.Err)
	}
	if out.Attempts != 1 || out.Status != 0 {
		t.Errorf("attempts %d status %d, want 1 and 0", out.Attempts, out.Status)
	}
}

func TestCallUnknownHost(t *testing.T) {
	tool := newTool("http://no-such-host.invalid/tool")
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	assertFailure(t, out, toolrouter.CategoryResource)
	if !strings.HasPrefix(out.Err, "tool endpoint unreachable: ") {
		t.Errorf("err = %q", out.Err)
	}
}

func TestCallStatusFailures(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		wantErr string
		wantCat toolrouter.ErrorCategory
	}{
		{"error string", 500, `{"error":"RuntimeError: boom"}`, "RuntimeError: boom", toolrouter.CategoryExecution},
		{"error object", 500, `{"error":{"message":"nested boom","code":7}}`, "nested boom", toolrouter.CategoryExecution},
		{"message field", 500, `{"message":"plain message"}`, "plain message", toolrouter.CategoryExecution},
		{"error beats message", 500, `{"message":"second","error":"first"}`, "first", toolrouter.CategoryExecution},
		{"empty error falls back to message", 500, `{"error":"","message":"fallback"}`, "fallback", toolrouter.CategoryExecution},
		{"error object without message", 500, `{"error":{"code":7}}`, `{"error":{"code":7}}`, toolrouter.CategoryExecution},
		{"text body", 500, "  Traceback: boom happened \n", "Traceback: boom happened", toolrouter.CategoryExecution},
		{"empty body", 500, "", "500 Internal Server Error", toolrouter.CategoryExecution},
		{"long body cut to 1 KiB", 500, long, long[:1024], toolrouter.CategoryExecution},
		{"message rules: memory", 500, `{"error":"out of memory"}`, "out of memory", toolrouter.CategoryResource},
		{"message rules: denied", 500, `{"error":"permission denied: /etc"}`, "permission denied: /etc", toolrouter.CategoryPermission},
		{"message rules: json", 500, `{"error":"cannot decode input"}`, "cannot decode input", toolrouter.CategoryParse},
		{"403", 403, `{"error":"nope"}`, "nope", toolrouter.CategoryPermission},
		{"401", 401, "", "401 Unauthorized", toolrouter.CategoryPermission},
		{"404", 404, "", "404 Not Found", toolrouter.CategoryNotFound},
		{"410", 410, "gone", "gone", toolrouter.CategoryNotFound},
		{"400", 400, `{"error":"bad field x"}`, "bad field x", toolrouter.CategorySchema},
		{"422", 422, `{"error":"x must be int"}`, "x must be int", toolrouter.CategorySchema},
		{"429", 429, "", "429 Too Many Requests", toolrouter.CategoryResource},
		{"502", 502, "", "502 Bad Gateway", toolrouter.CategoryExecution},
		{"503", 503, "", "503 Service Unavailable", toolrouter.CategoryResource},
		{"504", 504, "", "504 Gateway Timeout", toolrouter.CategoryTimeout},
		{"status rule beats message", 404, `{"error":"permission denied"}`, "permission denied", toolrouter.CategoryNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
			assertFailure(t, out, tc.wantCat)
			if out.Err != tc.wantErr {
				t.Errorf("err = %q, want %q", out.Err, tc.wantErr)
			}
			if out.Status != tc.status || out.Attempts != 1 {
				t.Errorf("status %d attempts %d, want %d and 1", out.Status, out.Attempts, tc.status)
			}
			// Only an error the tool reported as JSON counts as its answer.
			wantAnswered := strings.HasPrefix(tc.body, "{") && tc.wantErr != tc.body
			if out.Answered != wantAnswered {
				t.Errorf("answered = %v, want %v", out.Answered, wantAnswered)
			}
		})
	}
}

func TestCallAnswered(t *testing.T) {
	ok := serve(t, echo)
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(ok.URL), Args: map[string]any{"a": 1.0}})
	if !out.Success() || !out.Answered {
		t.Errorf("a 2xx JSON reply: success %v answered %v", out.Success(), out.Answered)
	}
	html := serve(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>") })
	out = newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(html.URL)})
	if out.Answered {
		t.Error("a non-JSON 2xx reply counts as an answer")
	}
	out = newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool("http://" + closedPort(t))})
	if out.Answered {
		t.Error("an unreachable tool counts as an answer")
	}
}

func TestCallDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
		_, _ = io.WriteString(w, `{}`)
	})
	mux.HandleFunc("/tool", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	srv := serve(t, mux.ServeHTTP)
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL + "/tool")})
	assertFailure(t, out, toolrouter.CategoryExecution)
	if out.Status != http.StatusTemporaryRedirect || followed.Load() != 0 {
		t.Errorf("status %d, followed %d times; want 307 and not followed", out.Status, followed.Load())
	}
}

func TestCallNonJSONReply(t *testing.T) {
	page := "<html>" + strings.Repeat("not json ", 100) + "</html>"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, page) })
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
	assertFailure(t, out, toolrouter.CategoryParse)
	if want := "tool returned a non-JSON reply: " + page[:200]; out.Err != want {
		t.Errorf("err = %q\nwant  %q", out.Err, want)
	}
	if out.Status != http.StatusOK {
		t.Errorf("status = %d", out.Status)
	}
}

func TestCallEmptyReplyIsNull(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusOK, http.StatusAccepted} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) })
			out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
			assertSuccess(t, out)
			if string(out.Output) != "null" || out.Status != status {
				t.Errorf("output %q status %d, want null and %d", out.Output, out.Status, status)
			}
		})
	}
}

// jsonString returns a JSON string literal of exactly n bytes.
func jsonString(n int) []byte {
	b := bytes.Repeat([]byte("a"), n)
	b[0], b[n-1] = '"', '"'
	return b
}

func TestCallReplySizes(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		name := "content-length"
		if chunked {
			name = "chunked"
		}
		t.Run(name, func(t *testing.T) {
			var size atomic.Int64
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				body := jsonString(int(size.Load()))
				if !chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				// Odd write sizes, flushed, so chunk boundaries fall anywhere.
				for len(body) > 0 {
					n := min(len(body), 7919)
					_, _ = w.Write(body[:n])
					body = body[n:]
					if chunked {
						w.(http.Flusher).Flush()
					}
				}
			})

			small := newClient(t, remote.Options{MaxReplyBytes: 100_000})
			for _, n := range []int{2, 1000, 32 << 10, 32<<10 + 1, 64 << 10, 99_999, 100_000} {
				size.Store(int64(n))
				out := small.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
				assertSuccess(t, out)
				if !bytes.Equal(out.Output, jsonString(n)) {
					t.Errorf("%d-byte reply came back as %d bytes, or altered", n, len(out.Output))
				}
			}
			for _, n := range []int{100_001, 100_002, 300_000} {
				size.Store(int64(n))
				out := small.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
				assertFailure(t, out, toolrouter.CategoryResource)
				if out.Err != "tool reply exceeds 100000 bytes" {
					t.Errorf("%d bytes: err = %q", n, out.Err)
				}
			}
		})
	}
}

func TestCallHugeReplyKeepsMemoryBounded(t *testing.T) {
	const total = 64 << 20
	block := bytes.Repeat([]byte("a"), 1<<20)
	for _, withLength := range []bool{false, true} {
		t.Run(fmt.Sprintf("content-length=%v", withLength), func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(total))
				}
				for i := 0; i < total/len(block); i++ {
					if _, err := w.Write(block); err != nil {
						return
					}
				}
			})
			c := newClient(t, remote.Options{})
			req := toolrouter.ExecRequest{Tool: newTool(srv.URL)}

			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out := c.Call(context.Background(), req)
			runtime.ReadMemStats(&after)

			assertFailure(t, out, toolrouter.CategoryResource)
			if out.Err != "tool reply exceeds 16777216 bytes" {
				t.Errorf("err = %q", out.Err)
			}
			// Reading stops after 16 MiB + 1 byte (in reused chunks, not a
			// growing slice); a declared Content-Length over the limit is
			// refused without reading at all.
			allocated := after.TotalAlloc - before.TotalAlloc
			bound := uint64(24 << 20)
			if withLength {
				bound = 4 << 20
			}
			t.Logf("allocated %.1f MiB during the call", float64(allocated)/(1<<20))
			if allocated > bound {
				t.Errorf("the call allocated %d MiB for a 64 MiB reply; want under %d MiB", allocated>>20, bound>>20)
			}
		})
	}
}

func TestCallRetries(t *testing.T) {
	t.Parallel()
	// script answers the i-th request (from 0) with statuses[i], the last one
	// repeating; 0 means reset the connection. It records the bodies.
	script := func(t *testing.T, header http.Header, statuses ...int) (*httptest.Server, func() [][]byte) {
		var (
			mu     sync.Mutex
			bodies [][]byte
		)
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			i := len(bodies)
			bodies = append(bodies, b)
			mu.Unlock()
			status := statuses[min(i, len(statuses)-1)]
			switch {
			case status == 0:
				resetConn(t, w)
			case status >= 300:
				for k, v := range header {
					w.Header()[k] = v
				}
				w.WriteHeader(status)
				_, _ = fmt.Fprintf(w, `{"error":"attempt %d failed"}`, i+1)
			default:
				_, _ = fmt.Fprintf(w, `{"attempt":%d}`, i+1)
			}
		})
		return srv, func() [][]byte {
			mu.Lock()
			defer mu.Unlock()
			return bodies
		}
	}
	args := map[string]any{"msg": "héllo", "n": 1}
	wantBody, _ := json.Marshal(args)

	for _, tc := range []struct {
		name        string
		idempotent  bool
		retries     int
		statuses    []int
		header      http.Header
		timeout     time.Duration
		wantOK      bool
		wantCat     toolrouter.ErrorCategory
		wantAtt     int
		wantStatus  int
		minDuration time.Duration
		maxDuration time.Duration
	}{
		{name: "503 then 200", idempotent: true, retries: 2, statuses: []int{503, 200}, wantOK: true, wantAtt: 2, wantStatus: 200, minDuration: 50 * time.Millisecond},
		{name: "502 504 then 200", idempotent: true, retries: 2, statuses: []int{502, 504, 200}, wantOK: true, wantAtt: 3, wantStatus: 200, minDuration: 150 * time.Millisecond},
		{name: "reset then 200", idempotent: true, retries: 1, statuses: []int{0, 200}, wantOK: true, wantAtt: 2, wantStatus: 200},
		{name: "retries exhausted", idempotent: true, retries: 2, statuses: []int{503}, wantCat: toolrouter.CategoryResource, wantAtt: 3, wantStatus: 503},
		{name: "not idempotent", idempotent: false, retries: 2, statuses: []int{503, 200}, wantCat: toolrouter.CategoryResource, wantAtt: 1, wantStatus: 503},
		{name: "not idempotent reset", idempotent: false, retries: 2, statuses: []int{0, 200}, wantCat: toolrouter.CategoryExecution, wantAtt: 1},
		{name: "no retries configured", idempotent: true, retries: 0, statuses: []int{503, 200}, wantCat: toolrouter.CategoryResource, wantAtt: 1, wantStatus: 503},
		{name: "500 is not retried", idempotent: true, retries: 2, statuses: []int{500, 200}, wantCat: toolrouter.CategoryExecution, wantAtt: 1, wantStatus: 500},
		{name: "Retry-After honoured", idempotent: true, retries: 1, statuses: []int{503, 200}, header: http.Header{"Retry-After": {"1"}},
			wantOK: true, wantAtt: 2, wantStatus: 200, minDuration: time.Second, maxDuration: 1800 * time.Millisecond},
		{name: "Retry-After capped at 2s", idempotent: true, retries: 1, statuses: []int{503, 200}, header: http.Header{"Retry-After": {"3600"}},
			wantOK: true, wantAtt: 2, wantStatus: 200, minDuration: 2 * time.Second, maxDuration: 2800 * time.Millisecond},
		{name: "Retry-After past the deadline stops", idempotent: true, retries: 3, statuses: []int{503, 200}, header: http.Header{"Retry-After": {"1"}},
			timeout: 300 * time.Millisecond, wantCat: toolrouter.CategoryResource, wantAtt: 1, wantStatus: 503, maxDuration: 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, bodies := script(t, tc.header, tc.statuses...)
			tool := newTool(srv.URL)
			tool.Idempotent, tool.Retries = tc.idempotent, tc.retries
			if tc.timeout > 0 {
				tool.Timeout = tc.timeout
			}
			start := time.Now()
			out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Args: args, ToolCallID: "tc_x"})
			elapsed := time.Since(start)

			if tc.wantOK {
				assertSuccess(t, out)
				if want := fmt.Sprintf(`{"attempt":%d}`, tc.wantAtt); string(out.Output) != want {
					t.Errorf("output %s, want %s", out.Output, want)
				}
			} else {
				assertFailure(t, out, tc.wantCat)
			}
			if out.Attempts != tc.wantAtt || out.Status != tc.wantStatus {
				t.Errorf("attempts %d status %d, want %d and %d (%+v)", out.Attempts, out.Status, tc.wantAtt, tc.wantStatus, out)
			}
			got := bodies()
			if len(got) != tc.wantAtt {
				t.Errorf("tool saw %d requests, want %d", len(got), tc.wantAtt)
			}
			for i, b := range got {
				if !bytes.Equal(b, wantBody) {
					t.Errorf("attempt %d sent %q, want %q", i+1, b, wantBody)
				}
			}
			if elapsed < tc.minDuration || tc.maxDuration > 0 && elapsed > tc.maxDuration {
				t.Errorf("call took %v, want within [%v, %v]", elapsed, tc.minDuration, tc.maxDuration)
			}
		})
	}
}

func TestCallRetriesUnreachableEndpoint(t *testing.T) {
	tool := newTool("http://" + closedPort(t))
	tool.Idempotent, tool.Retries = true, 2
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	assertFailure(t, out, toolrouter.CategoryResource)
	if out.Attempts != 3 {
		t.Errorf("attempts = %d, want 3", out.Attempts)
	}
}

func TestCallCancelledDuringBackoff(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tool := newTool(srv.URL)
	tool.Idempotent, tool.Retries = true, 3
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	out := newClient(t, remote.Options{}).Call(ctx, toolrouter.ExecRequest{Tool: tool})
	assertFailure(t, out, toolrouter.CategoryExecution)
	if out.Err != "call cancelled: context canceled" || out.Attempts != 1 || out.Status != 503 {
		t.Errorf("got %+v, want cancelled after 1 attempt with status 503", out)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancelled call took %v", d)
	}
}

func TestCallReusesConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
			// Longer than what is read for the error text: the rest is drained.
			_, _ = io.WriteString(w, `{"error":"boom `+strings.Repeat("x", 100_000)+`"}`)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/text":
			_, _ = io.WriteString(w, "plain text")
		default:
			_, _ = io.WriteString(w, `{"ok":true}`)
			w.(http.Flusher).Flush() // chunked
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	// The production transport, allowed one connection to the tool: the
	// transport hands a drained connection back to its pool on its own
	// goroutine after the body's end was read, so with no such bound a
	// loaded machine sometimes has the next call dial before it is back.
	// With it, the next call waits for that connection and dials only when
	// it was closed (a body not drained).
	tr := outbound.NewTransport()
	tr.MaxConnsPerHost = 1
	c := newClient(t, remote.Options{Transport: tr})
	for i := 0; i < 40; i++ {
		path := []string{"/ok", "/fail", "/empty", "/text"}[i%4]
		c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL + path), Args: map[string]any{"i": i}})
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("40 sequential calls opened %d connections, want 1", n)
	}
}

func TestCallConcurrent(t *testing.T) {
	srv := serve(t, echo)
	c := newClient(t, remote.Options{})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			args := map[string]any{"i": i}
			want, _ := json.Marshal(args)
			out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL), Args: args, ToolCallID: fmt.Sprint("tc_", i)})
			if !out.Success() || !bytes.Equal(out.Output, want) {
				t.Errorf("call %d: %+v", i, out)
			}
		})
	}
	wg.Wait()
}

func TestCallBadRequests(t *testing.T) {
	c := newClient(t, remote.Options{})
	t.Run("no tool", func(t *testing.T) {
		out := c.Call(context.Background(), toolrouter.ExecRequest{})
		assertFailure(t, out, toolrouter.CategoryExecution)
		if out.Attempts != 0 {
			t.Errorf("attempts = %d", out.Attempts)
		}
	})
	t.Run("arguments not encodable", func(t *testing.T) {
		out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool("http://127.0.0.1:1"), Args: map[string]any{"x": math.NaN()}})
		assertFailure(t, out, toolrouter.CategorySchema)
		if out.Attempts != 0 {
			t.Errorf("attempts = %d", out.Attempts)
		}
	})
	t.Run("malformed endpoint", func(t *testing.T) {
		out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool("http://[::1/?token=" + secret)})
		assertFailure(t, out, toolrouter.CategoryExecution)
		if !strings.HasPrefix(out.Err, "invalid tool endpoint: ") {
			t.Errorf("err = %q", out.Err)
		}
	})
	t.Run("unsupported scheme", func(t *testing.T) {
		out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool("ftp://example.com/?token=" + secret)})
		assertFailure(t, out, toolrouter.CategoryExecution)
		if !strings.HasPrefix(out.Err, "tool request failed: ") {
			t.Errorf("err = %q", out.Err)
		}
	})
}

// stubTransport answers every request with reply, without a network.
type stubTransport struct {
	reply     []byte
	requests  atomic.Int64
	closeIdle atomic.Int64
}

func (s *stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.requests.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(s.reply)),
		ContentLength: int64(len(s.reply)),
		Request:       r,
	}, nil
}

func (s *stubTransport) CloseIdleConnections() { s.closeIdle.Add(1) }

func TestCallUsesGivenTransport(t *testing.T) {
	stub := &stubTransport{reply: []byte(`{"stub":true}`)}
	c := remote.New(remote.Options{Transport: stub})
	out := c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool("http://tool.invalid/x")})
	assertSuccess(t, out)
	if string(out.Output) != `{"stub":true}` || stub.requests.Load() != 1 {
		t.Errorf("output %s after %d requests", out.Output, stub.requests.Load())
	}
	c.CloseIdle()
	if stub.closeIdle.Load() != 1 {
		t.Error("CloseIdle did not reach the transport")
	}
}

func TestBackoff(t *testing.T) {
	for attempt := 1; attempt <= 12; attempt++ {
		base := min(100*time.Millisecond<<(attempt-1), 2*time.Second)
		for range 200 {
			d := remote.Backoff(attempt)
			if d < base/2 || d >= base*3/2 || d > 2*time.Second {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v) and at most 2s", attempt, d, base/2, base*3/2)
			}
		}
	}
}

func BenchmarkCall(b *testing.B) {
	srv := serve(b, echo)
	c := newClient(b, remote.Options{})
	req := toolrouter.ExecRequest{
		Tool:       newTool(srv.URL + "/echo"),
		Args:       map[string]any{"msg": "hello", "n": 1},
		PlanID:     "plan-001",
		ToolCallID: "tc_0123456789abcdef01234567",
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := c.Call(context.Background(), req); !out.Success() {
			b.Fatal(out.Err)
		}
	}
}

func BenchmarkCallParallel(b *testing.B) {
	srv := serve(b, echo)
	c := newClient(b, remote.Options{})
	req := toolrouter.ExecRequest{Tool: newTool(srv.URL + "/echo"), Args: map[string]any{"msg": "hello"}, PlanID: "p", ToolCallID: "tc"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if out := c.Call(context.Background(), req); !out.Success() {
				b.Error(out.Err)
				return
			}
		}
	})
}

func BenchmarkCallStubTransport(b *testing.B) {
	c := remote.New(remote.Options{Transport: &stubTransport{reply: []byte(`{"msg":"hello","n":1}`)}})
	req := toolrouter.ExecRequest{
		Tool:       newTool("http://tool.invalid/echo"),
		Args:       map[string]any{"msg": "hello", "n": 1},
		PlanID:     "plan-001",
		ToolCallID: "tc_0123456789abcdef01234567",
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := c.Call(context.Background(), req); !out.Success() {
			b.Fatal(out.Err)
		}
	}
}

func TestCallEndpointUserinfoIsBasicAuth(t *testing.T) {
	var got []string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, `{}`)
	})
	c := newClient(t, remote.Options{})
	withUser := strings.Replace(srv.URL, "http://", "http://us%20er:p%40ss@", 1) + "/x"
	assertSuccess(t, c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(withUser)}))
	// The tool's own Authorization wins; an empty one does not.
	tool := newTool(withUser)
	tool.Headers = map[string]string{"authorization": "Bearer " + secret}
	assertSuccess(t, c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool}))
	tool = newTool(withUser)
	tool.Headers = map[string]string{"Authorization": ""}
	assertSuccess(t, c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool}))
	// Only a user name.
	assertSuccess(t, c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(strings.Replace(srv.URL, "http://", "http://solo@", 1))}))
	want := []string{"Basic dXMgZXI6cEBzcw==", "Bearer " + secret, "Basic dXMgZXI6cEBzcw==", "Basic c29sbzo="}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Authorization headers %q, want %q", got, want)
	}
}

func TestCallRedirectStatuses(t *testing.T) {
	for _, tc := range []struct {
		status   int
		location string
		wantErr  string
		wantCat  toolrouter.ErrorCategory
		wantStat int
	}{
		{http.StatusFound, "", "302 Found", toolrouter.CategoryExecution, 302},
		{http.StatusMovedPermanently, "/elsewhere", "301 Moved Permanently", toolrouter.CategoryExecution, 301},
		{http.StatusPermanentRedirect, "/elsewhere", "308 Permanent Redirect", toolrouter.CategoryExecution, 308},
		{http.StatusNotModified, "http://[::1", "304 Not Modified", toolrouter.CategoryExecution, 304},
		// As http.Client did: a Location that does not parse fails the request.
		{http.StatusSeeOther, "http://[::1", `tool request failed: failed to parse Location header "http://[::1": parse "http://[::1": missing ']' in host`, toolrouter.CategoryExecution, 0},
		{http.StatusTemporaryRedirect, "%zz", `tool request failed: failed to parse Location header "%zz": parse "%zz": invalid URL escape "%zz"`, toolrouter.CategoryExecution, 0},
	} {
		t.Run(fmt.Sprint(tc.status, tc.location), func(t *testing.T) {
			var hits atomic.Int32
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if tc.location != "" {
					w.Header()["Location"] = []string{tc.location}
				}
				w.WriteHeader(tc.status)
			})
			tool := newTool(srv.URL + "/tool")
			out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
			assertFailure(t, out, tc.wantCat)
			if out.Err != tc.wantErr || out.Status != tc.wantStat || out.Attempts != 1 || hits.Load() != 1 {
				t.Errorf("got err %q status %d attempts %d after %d requests, want %q, %d, 1, 1", out.Err, out.Status, out.Attempts, hits.Load(), tc.wantErr, tc.wantStat)
			}
		})
	}
}

func TestCallEndpointsSharedAndDistinct(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Host+" "+r.URL.RequestURI())
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	})
	c := newClient(t, remote.Options{})
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, ep := range []string{srv.URL + "/a?x=1", srv.URL + "/b", srv.URL + "/a?x=1", srv.URL + "/b"} {
		assertSuccess(t, c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(ep)}))
	}
	// A Host header of the tool's goes to that tool alone.
	tool := newTool(srv.URL + "/b")
	tool.Headers = map[string]string{"Host": "virtual.example"}
	assertSuccess(t, c.Call(context.Background(), toolrouter.ExecRequest{Tool: tool}))
	assertSuccess(t, c.Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL + "/b")}))
	want := []string{host + " /a?x=1", host + " /b", host + " /a?x=1", host + " /b", "virtual.example /b", host + " /b"}
	if fmt.Sprint(paths) != fmt.Sprint(want) {
		t.Errorf("requests %q, want %q", paths, want)
	}
}

// TestCallMarksItsOutputChecked: the output the client checked is JSON is
// handed along marked (issue 37), so that redaction and shaping do not scan
// it again to know; a reply with invalid UTF-8 replaced is still checked.
func TestCallMarksItsOutputChecked(t *testing.T) {
	for _, reply := range []string{`{"a":[1,2]}`, "{\"a\":\"\xff\"}", ""} {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, reply) })
		out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool(srv.URL)})
		assertSuccess(t, out)
		if !out.OutputChecked() {
			t.Errorf("reply %q: output %q not marked checked", reply, out.Output)
		}
	}
}

// TestCallAnswersAsHTTPClient: requests go to the transport, not through an
// http.Client (issue 37), and what a call reports is still what Client.Do
// made of the same replies: a plain-HTTP server behind an https endpoint
// is http.ErrSchemeMismatch (TestCallRedirectStatuses covers redirects),
// and a transport answering without a body is an empty reply.
func TestCallAnswersAsHTTPClient(t *testing.T) {
	srv := serve(t, echo)
	tool := newTool(strings.Replace(srv.URL, "http://", "https://", 1) + "/tool")
	out := newClient(t, remote.Options{}).Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	assertFailure(t, out, toolrouter.CategoryExecution)
	if want := "tool request failed: " + http.ErrSchemeMismatch.Error(); out.Err != want {
		t.Errorf("https to a plain-HTTP server: %q, want %q", out.Err, want)
	}
	noBody := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Request: r}, nil
	})
	out = newClient(t, remote.Options{Transport: noBody}).Call(context.Background(), toolrouter.ExecRequest{Tool: newTool("http://127.0.0.1:9/tool")})
	assertSuccess(t, out)
	if string(out.Output) != "null" {
		t.Errorf("a reply without a body: output %s, want null", out.Output)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
