package mcpclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestMCPCallHotPath: on a streamable HTTP session, tools/call is sent by
// toolrouterd itself (fastcall.go), with the session's headers and an id
// of its own, whether the server answers with an event stream or with
// JSON; requests the server sends on the call's stream are answered.
func TestMCPCallHotPath(t *testing.T) {
	for _, jsonMode := range []bool{false, true} {
		name := "sse"
		if jsonMode {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			f := newFakeHTTPServer(t, nil, &mcp.StreamableHTTPOptions{JSONResponse: jsonMode}, func(s *mcp.Server) {
				s.AddTool(&mcp.Tool{Name: "ping-back", InputSchema: objectSchema},
					func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						if err := req.Session.Ping(ctx, nil); err != nil {
							return nil, err
						}
						return &mcp.CallToolResult{Content: text("pong"), StructuredContent: map[string]any{"z": 1, "a": "<b>"}}, nil
					})
			}, false)
			fx := newManager(t)
			fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})

			out := call(fx.m, find(t, fx.m, "s/echo"), map[string]any{"msg": "hi"})
			if !out.Success() || string(out.Output) != `"echo: hi"` || out.Attempts != 1 {
				t.Fatalf("echo = %+v (output %s)", out, out.Output)
			}
			if !strings.Contains(string(out.MCPResult), `"text":"echo: hi"`) {
				t.Errorf("MCPResult = %s", out.MCPResult)
			}
			// The server's ping on the call's stream (or, in JSON mode, on
			// the standalone stream) is answered, then the result arrives.
			out = call(fx.m, find(t, fx.m, "s/ping-back"), nil)
			if !out.Success() || string(out.Output) != `{"a":"\u003cb\u003e","z":1}` {
				t.Fatalf("ping-back = %+v (output %s)", out, out.Output)
			}

			f.mu.Lock()
			posts := slices.Clone(f.posts)
			f.mu.Unlock()
			calls := 0
			for _, p := range posts {
				if !strings.Contains(p.body, `"method":"tools/call"`) {
					continue
				}
				calls++
				if !strings.Contains(p.body, `"id":10995116277`) { // 1<<40 + n
					t.Errorf("tools/call not sent by the hot path: %s", p.body)
				}
				if p.header.Get("Mcp-Session-Id") == "" || p.header.Get("Mcp-Protocol-Version") != "2025-11-25" {
					t.Errorf("tools/call without the session's headers: %v", p.header)
				}
			}
			if calls != 2 {
				t.Errorf("%d tools/call reached the server, want 2", calls)
			}
		})
	}
}

// cpuTime is the CPU time the process used so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMCPCall: one tools/call of an echo tool (bench/mcpecho's) over
// a streamable HTTP session, through the SDK's CallTool (what -tags sdkmcp
// builds) and through the hot path. The server runs in-process and
// costs both the same, so the difference is the client's.
//
//	go test -run '^$' -bench MCPCall -benchmem ./internal/mcpclient/
func BenchmarkMCPCall(b *testing.B) {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(string(req.Params.Arguments)), StructuredContent: args(req)}, nil
		})
	hs, conns := countingServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	for _, path := range []string{"sdk", "hotpath"} {
		b.Run(path, func(b *testing.B) {
			m := mcpclient.New(zerolog.Nop(), nil)
			defer m.Close()
			if path == "sdk" {
				mcpclient.SetSDKCalls(m, true)
			}
			m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", hs.URL)})
			benchCalls(b, m, toolrouter.ExecRequest{Tool: find(b, m, "s/echo"), Args: map[string]any{"msg": "hi"}}, conns)
		})
	}
}

// rawServer is a hand-written MCP server (2025-06-18, one tool "t") for
// the hot path's tests: it answers initialize, tools/list, notifications
// and other requests itself, and hands the rest to its fields.
type rawServer struct {
	session func() string                                                    // the session id of an initialize; nil: "s1"
	get     func(w http.ResponseWriter, r *http.Request)                     // GET requests; nil: 405, no standalone stream
	call    func(w http.ResponseWriter, r *http.Request, id json.RawMessage) // tools/call
	answer  func(w http.ResponseWriter, id, result json.RawMessage)          // the client's responses (to pings); nil: 202
}

// start serves s and syncs a manager with it as server "s".
func (s rawServer) start(t *testing.T) (*httptest.Server, fixture) {
	t.Helper()
	reply := func(w http.ResponseWriter, id json.RawMessage, result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			if r.Method == http.MethodGet && s.get != nil {
				s.get(w, r)
				return
			}
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch {
		case m.Method == "initialize":
			id := "s1"
			if s.session != nil {
				id = s.session()
			}
			w.Header().Set("Mcp-Session-Id", id)
			reply(w, m.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"f","version":"1"}}`)
		case m.Method == "tools/list":
			reply(w, m.ID, `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)
		case m.Method == "tools/call":
			s.call(w, r, m.ID)
		case m.Method == "" && s.answer != nil:
			s.answer(w, m.ID, m.Result)
		case m.ID == nil || m.Method == "": // a notification, a response
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
		}
	}))
	t.Cleanup(hs.Close)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", hs.URL)})
	return hs, fx
}

// TestMCPCallStreamResumed: a server (hand-written here) that sends a
// ping on the call's stream, then ends the stream after an event id
// without the response: the ping is answered, the stream resumed with
// Last-Event-ID, and the response read from the resumed stream.
func TestMCPCallStreamResumed(t *testing.T) {
	var mu sync.Mutex
	var callID json.RawMessage
	var pongs, resumes int
	_, fx := rawServer{
		get: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Last-Event-Id") != "e1" || r.Header.Get("Mcp-Session-Id") != "s1" {
				w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
				return
			}
			mu.Lock()
			resumes++
			id := callID
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
		},
		call: func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			mu.Lock()
			callID = id
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: e0\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"ping\"}\n\n")
			fmt.Fprint(w, "id: e1\nretry: 10\ndata:\n\n") // then the stream ends
		},
		answer: func(w http.ResponseWriter, id, result json.RawMessage) {
			mu.Lock()
			if string(id) == `"p1"` && string(result) == `{}` {
				pongs++
			}
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		},
	}.start(t)
	out := call(fx.m, find(t, fx.m, "s/t"), nil)
	if !out.Success() || string(out.Output) != `"resumed"` {
		t.Fatalf("outcome %+v (output %s)", out, out.Output)
	}
	mu.Lock()
	defer mu.Unlock()
	if pongs != 1 || resumes != 1 {
		t.Errorf("pongs %d, resumes %d; want 1 and 1", pongs, resumes)
	}
}

// TestMCPCallStreamCutMidEvent: a stream that breaks inside an event
// (after its id, before the blank line that ends it) is resumed after the
// last event that was complete, not after the unfinished one (WHATWG: the
// last event ID is set when an event is dispatched), so the response the
// unfinished event carried is sent again.
func TestMCPCallStreamCutMidEvent(t *testing.T) {
	var mu sync.Mutex
	var callID json.RawMessage
	var resumedAfter []string
	response := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"whole"}]}}`, callID)
	}
	_, fx := rawServer{
		get: func(w http.ResponseWriter, r *http.Request) {
			last := r.Header.Get("Last-Event-Id")
			if last == "" {
				w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
				return
			}
			mu.Lock()
			resumedAfter = append(resumedAfter, last)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			if last == "e1" { // replay what followed e1
				fmt.Fprintf(w, "id: e2\ndata: %s\n\n", response())
			}
		},
		call: func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			mu.Lock()
			callID = id
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: e1\nretry: 10\ndata:\n\n")
			// The response's event, cut before its end.
			resp := response()
			fmt.Fprintf(w, "id: e2\ndata: %s", resp[:len(resp)/2])
		},
	}.start(t)
	out := call(fx.m, find(t, fx.m, "s/t"), nil)
	if !out.Success() || string(out.Output) != `"whole"` {
		t.Errorf("outcome %+v (output %s)", out, out.Output)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(resumedAfter, []string{"e1"}) {
		t.Errorf("stream resumed after %q, want after e1 only", resumedAfter)
	}
}

// TestMCPCallReplyTooLarge: the hot path reads no larger reply than the
// SDK's path does (mcp.DefaultMaxEventSize, 16 MiB, the cap of HTTP
// tools' replies too), whether the server answers JSON or an event
// stream.
func TestMCPCallReplyTooLarge(t *testing.T) {
	big := strings.Repeat("x", mcp.DefaultMaxEventSize+1)
	for _, sse := range []bool{false, true} {
		hs, fx := rawServer{call: func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, big)
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", msg)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, msg)
		}}.start(t)
		out := call(fx.m, find(t, fx.m, "s/t"), nil)
		if out.Success() || !strings.Contains(out.Err, "larger than") && !strings.Contains(out.Err, "exceeded") {
			t.Errorf("sse %v: a reply of %d bytes gave %.200s (output %d bytes)", sse, len(big), out.Err, len(out.Output))
		}
		hs.Close()
	}
}

// TestMCPCallSessionLostMidCall: a server that took a call (its stream
// began) and then no longer knows the session when the stream is resumed
// may have run the tool: a tool that is not idempotent is not called
// again on a new session (the call fails), as it would be for a session
// lost before the call reached the server.
func TestMCPCallSessionLostMidCall(t *testing.T) {
	var mu sync.Mutex
	calls, sessions := 0, 0
	_, fx := rawServer{
		session: func() string {
			mu.Lock()
			defer mu.Unlock()
			sessions++
			return fmt.Sprintf("s%d", sessions)
		},
		get: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Last-Event-Id") == "" {
				w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
				return
			}
			http.Error(w, "session not found", http.StatusNotFound) // it expired mid-call
		},
		call: func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: e1\nretry: 10\ndata:\n\n") // then the stream ends
		},
	}.start(t)
	out := call(fx.m, find(t, fx.m, "s/t"), nil)
	if out.Success() || out.Category != toolrouter.CategoryExecution {
		t.Errorf("outcome %+v, want an execution failure", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("the server got %d tools/call, want 1: the tool may have run", calls)
	}
}

// TestMCPCallStreamsLeftOpenAreBounded: a server that keeps each call's
// stream open after its response holds at most maxDrains of them (and
// their connections) open; the streams of the calls beyond are closed at
// once, and every call still gets its answer.
func TestMCPCallStreamsLeftOpenAreBounded(t *testing.T) {
	var open, peak atomic.Int32
	hs, fx := rawServer{call: func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n", id)
		w.(http.Flusher).Flush()
		n := open.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-r.Context().Done() // never ends the stream: the client must
		open.Add(-1)
	}}.start(t)
	defer hs.CloseClientConnections() // the streams still open, first
	tool := find(t, fx.m, "s/t")
	const calls = mcpclient.MaxDrains + 36
	for i := range calls {
		if out := call(fx.m, tool, nil); !out.Success() || string(out.Output) != `"ok"` {
			t.Fatalf("call %d: %+v (output %s)", i, out, out.Output)
		}
	}
	// The streams closed by the client end on the server when it notices.
	eventually(t, "at most maxDrains streams left open", func() bool { return open.Load() <= mcpclient.MaxDrains })
	if n := open.Load(); n < 1 {
		t.Errorf("%d streams open: the ends of streams are no longer read in the background", n)
	}
	// Without the bound every stream stays open until its drain times out
	// (seconds after the last call).
	if p := peak.Load(); p >= calls {
		t.Errorf("%d of %d streams were open at once", p, calls)
	}
}

// BenchmarkMCPCallSSE: one hot-path tools/call against a cheap
// hand-written server that answers as the go-sdk's streamable handler
// does (headers and one "event: message" flushed together, the end of the
// chunked stream written after), so that the client's share of the CPU,
// which this benchmark is for, is large. Compare runs with benchstat:
//
//	go test -run '^$' -bench MCPCallSSE -benchmem -benchtime 20000x -count 10 ./internal/mcpclient/
//
// MCPBENCH_URL=http://127.0.0.1:9101/mcp calls that server instead (say
// bench/mcpecho, the go-sdk's handler, in a process of its own).
func BenchmarkMCPCallSSE(b *testing.B) {
	hs, conns := countingServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body := make([]byte, 0, 512)
		body, _ = readAllInto(r.Body, body)
		id := jsonField(body, "id")
		var reply string
		switch method := string(jsonField(body, "method")); method {
		case `"initialize"`:
			w.Header().Set("Mcp-Session-Id", "s1")
			reply = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"f","version":"1"}}`
		case `"tools/list"`:
			reply = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
		case `"tools/call"`:
			args := jsonField(body, "arguments")
			reply = fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"structuredContent":%s}`, args, args)
		default:
			if id == nil { // a notification
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-cache, no-transform")
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, reply)
		w.(http.Flusher).Flush()
	}))
	defer hs.Close()
	m := mcpclient.New(zerolog.Nop(), nil)
	defer m.Close()
	url := hs.URL
	if u := os.Getenv("MCPBENCH_URL"); u != "" {
		url = u
	}
	m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", url)})
	benchCalls(b, m, toolrouter.ExecRequest{Tool: find(b, m, "s/echo"), Args: map[string]any{"msg": "hi"},
		ArgsJSON: json.RawMessage(`{"msg":"hi"}`)}, conns)
}

// countingServer starts h on a test server that counts the connections
// clients open to it.
func countingServer(h http.Handler) (*httptest.Server, *atomic.Int64) {
	hs := httptest.NewUnstartedServer(h)
	conns := new(atomic.Int64)
	hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	hs.Start()
	return hs, conns
}

// benchCalls calls req in the benchmark's loop and reports the process's
// CPU time per call (unlike wall time, it hardly depends on what else runs
// on the machine) and the connections opened to the server per 1000 calls
// (a call that leaves its connection unusable costs the next one a new
// connection).
func benchCalls(b *testing.B, m *mcpclient.Manager, req toolrouter.ExecRequest, conns *atomic.Int64) {
	b.ReportAllocs()
	before, conns0 := cpuTime(), conns.Load()
	for b.Loop() {
		if out := m.Call(context.Background(), req); !out.Success() || string(out.Output) != `{"msg":"hi"}` {
			b.Fatalf("outcome %+v (output %s)", out, out.Output)
		}
	}
	b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(conns.Load()-conns0)*1000/float64(b.N), "conns/1000calls")
}

// readAllInto appends r's bytes to buf.
func readAllInto(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// jsonField is the raw value of the first "name": in msg, for the
// benchmark's server (which must cost little): a string, or an object
// or number without nested strings containing brackets.
func jsonField(msg []byte, name string) []byte {
	key := []byte(`"` + name + `":`)
	i := bytes.Index(msg, key)
	if i < 0 {
		return nil
	}
	v := msg[i+len(key):]
	switch {
	case len(v) > 0 && v[0] == '"':
		if j := bytes.IndexByte(v[1:], '"'); j >= 0 {
			return v[:j+2]
		}
	case len(v) > 0 && v[0] == '{':
		depth := 0
		for j, c := range v {
			switch c {
			case '{':
				depth++
			case '}':
				if depth--; depth == 0 {
					return v[:j+1]
				}
			}
		}
	default:
		if j := bytes.IndexAny(v, ",}"); j >= 0 {
			return v[:j]
		}
	}
	return nil
}
