package http1_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/http1"
)

// handler answers by path; the differential test runs it on both servers.
func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/sniff", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html><body>hi</body></html>")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("0123456789", 2000))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Len", strconv.Itoa(len(b)))
		w.Write(b)
	})
	mux.HandleFunc("/unread", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "did not read the body")
	})
	mux.HandleFunc("/flush", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "one,")
		http.NewResponseController(w).Flush()
		io.WriteString(w, "two")
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		w.Write([]byte("not allowed"))
	})
	mux.HandleFunc("/declared", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "abcdef") // too long: the rest is refused
	})
	mux.HandleFunc("/early", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a>")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "later")
	})
	mux.HandleFunc("/inject", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Value", "a\r\nInjected: yes")
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		w.WriteHeader(code)
	})
	return mux
}

// servers starts the handler on http.Server and on http1.Server; it
// returns their addresses, in that order.
func servers(t *testing.T, h http.Handler) (std, own string) {
	t.Helper()
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s1 := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 1 << 10}
	s2 := &http1.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 1 << 10}
	go s1.Serve(l1)
	go s2.Serve(l2)
	t.Cleanup(func() { s1.Close(); s2.Close() })
	return l1.Addr().String(), l2.Addr().String()
}

// reply is what a client sees of one response.
type reply struct {
	Status  int
	Body    string
	Type    string
	Length  int64
	Close   bool
	Value   string
	Trailer string
}

// exchange writes raw on a new connection, closes its writing half, and
// reads every response until the server closes.
func exchange(t *testing.T, addr, raw string) []reply {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	br := bufio.NewReader(c)
	var out []reply
	for {
		method := http.MethodGet
		if strings.HasPrefix(raw, "HEAD") {
			method = http.MethodHead
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "reset") {
				t.Fatalf("%q: %v", raw, err)
			}
			return out
		}
		b, _ := io.ReadAll(resp.Body)
		body := string(b)
		if len(body) > 40 {
			body = fmt.Sprintf("%s… (%d bytes)", body[:40], len(body))
		}
		out = append(out, reply{Status: resp.StatusCode, Body: body, Type: resp.Header.Get("Content-Type"),
			Length: resp.ContentLength, Close: resp.Close, Value: resp.Header.Get("X-Value") + resp.Header.Get("Injected")})
	}
}

// TestSameAnswersAsNetHTTP holds http1.Server to http.Server: the same raw
// requests get the same statuses, bodies, types, lengths and keep-alive.
func TestSameAnswersAsNetHTTP(t *testing.T) {
	std, own := servers(t, handler())
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }
	for _, raw := range []string{
		get("/small"),
		get("/sniff"),
		get("/big"),
		get("/flush"),
		get("/nocontent"),
		get("/declared"),
		get("/early"),
		get("/inject"),
		get("/status/201"),
		get("/status/304"),
		get("/status/599"),
		get("/missing"),
		get("/small") + get("/big") + get("/small"), // pipelined
		get("/close") + get("/small"),
		"HEAD /small HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /big HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /flush HTTP/1.1\r\nHost: x\r\n\r\nHEAD /small HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + get("/small"),
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n" + get("/small"),
		"POST /unread HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789" + get("/small"),
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nshort",
		"GET /small HTTP/1.0\r\n\r\n" + get("/small"),
		"GET /small HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /big HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get("/small"),
		"GET /small HTTP/1.1\r\n\r\n",
		"GET /small HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET /small HTTP/2.0\r\nHost: x\r\n\r\n",
		"GET /small HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n",
		"GET /small HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n",
		"GET /small HTTP/1.1\r\nHost: x\r\nExpect: the-unexpected\r\n\r\n",
		"GET /small HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n",
		"GARBAGE\r\n\r\n",
		"GET\r\n\r\n",
		"\r\n\r\n",
		"GET /small HTTP/1.1\r\nHost: x\r\n", // cut short
	} {
		want, got := exchange(t, std, raw), exchange(t, own, raw)
		if fmt.Sprint(want) != fmt.Sprint(got) {
			if len(raw) > 100 {
				raw = raw[:100] + "…"
			}
			t.Errorf("%q:\nnet/http: %+v\nhttp1:    %+v", raw, want, got)
		}
	}
}

func TestExpectContinue(t *testing.T) {
	_, own := servers(t, handler())
	c, err := net.Dial("tcp", own)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue before the body, got %v %v", resp, err)
	}
	io.WriteString(c, "hello")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "hello" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
}

// A client that goes away while its request runs long: the request's
// context is cancelled (what http.Server's background read does).
func TestClientCloseCancelsLongRequest(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan error, 1)
	s := &http1.Server{WatchAfter: time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		close(started)
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(20 * time.Second):
			cancelled <- errors.New("not cancelled within 20s")
		}
	})}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	<-started
	c.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// A long request whose client stays, then sends its next request
// (pipelined) while the first runs: not cancelled, and both answered.
func TestLongRequestWithPipelinedNext(t *testing.T) {
	release := make(chan struct{})
	var first = true
	s := &http1.Server{WatchAfter: time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first {
			first = false
			<-release
		}
		if err := r.Context().Err(); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
		}
		io.WriteString(w, r.URL.Path)
	})}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
	// The watch starts within a millisecond or so; the next request's
	// bytes then arrive on a watched connection.
	time.AfterFunc(50*time.Millisecond, func() {
		io.WriteString(c, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
		time.AfterFunc(50*time.Millisecond, func() { close(release) })
	})
	br := bufio.NewReader(c)
	for _, want := range []string{"/a", "/b"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != want {
			t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, b, want)
		}
	}
}

func TestShutdownWaitsForActiveAndClosesIdle(t *testing.T) {
	release, running := make(chan struct{}), make(chan struct{})
	s := &http1.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(running)
			<-release
		}
		io.WriteString(w, "done")
	})}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(idle, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
	ibr := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(ibr, nil); err != nil || resp.StatusCode != 200 {
		t.Fatal(resp, err)
	} else {
		io.ReadAll(resp.Body)
	}
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		slow <- string(b)
	}()
	<-running
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := ibr.ReadByte(); err == nil {
		t.Fatal("the idle connection is still open")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a request was active", err)
	default:
	}
	close(release)
	if got := <-slow; got != "done" {
		t.Fatalf("active request: %q", got)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("accepting after Shutdown")
	}
}

func TestReadHeaderTimeoutClosesSlowClient(t *testing.T) {
	s := &http1.Server{Handler: handler(), ReadHeaderTimeout: 50 * time.Millisecond}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /small HTTP/1.1\r\nHo") // and nothing more
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("want the server to close the connection, got %v", err)
	}
}

// A handler that answers without reading a large body: the client, still
// sending, reads the answer rather than a reset connection.
func TestUnreadLargeBodyAnswerReachesClient(t *testing.T) {
	_, own := servers(t, handler())
	for _, size := range []int{100 << 10, 4 << 20} {
		c, err := net.Dial("tcp", own)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		// All of it is sent before the answer is read: an answer the
		// client has not read yet is lost if the server resets.
		fmt.Fprintf(c, "POST /unread HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
		if _, err := c.Write(make([]byte, size)); err != nil {
			t.Fatalf("%d bytes unread: sending: %v", size, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%d bytes unread: %v", size, err)
		}
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "did not read the body" {
			t.Fatalf("%d bytes unread: %d %q", size, resp.StatusCode, b)
		}
		if wantClose := size > 256<<10; resp.Close != wantClose {
			t.Fatalf("%d bytes unread: Connection: close %v, want %v", size, resp.Close, wantClose)
		}
		c.Close()
	}
}

// The watch timer of a request whose body is not read yet may fire at
// once: it must not see the timer before serveOne stored it (a nil
// timer's Reset would take the process down).
func TestWatchTimerFiresAtOnce(t *testing.T) {
	started := make(chan struct{}, 1)
	s := &http1.Server{WatchAfter: time.Nanosecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	defer s.Close()
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
		<-started // the body comes once the handler runs: the watch fires before it is read
		io.WriteString(c, "hello")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != "hello" {
			t.Fatalf("%q", b)
		}
		c.Close()
	}
}

// A handler that sends its answer's header before it reads a body the
// client holds back for 100 Continue: no 100 Continue may follow, it
// would land inside the answer (http.Server sends none once the header
// is written).
func TestNoContinueAfterHeaderSent(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "head,")
		http.NewResponseController(w).Flush()
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	std, own := servers(t, h)
	for _, addr := range []string{std, own} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d before the body", addr, resp.StatusCode)
		}
		io.WriteString(c, "hello") // the client sends its body after a final status
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != "head,hello" {
			t.Fatalf("%s: body %q, %v", addr, b, err)
		}
	}
}

// A handler that sets Transfer-Encoding itself: the body is framed as the
// header says (http.Server chunks it, or drops the header when there is a
// Content-Length).
func TestHandlerTransferEncoding(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		if r.URL.Path == "/identity" {
			w.Header().Set("Transfer-Encoding", "identity")
		}
		if r.URL.Path == "/cl" {
			w.Header().Set("Content-Length", "5")
		}
		io.WriteString(w, "hello")
	})
	std, own := servers(t, h)
	for _, path := range []string{"/", "/cl", "/identity"} {
		raw := "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\nGET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"
		want, got := exchange(t, std, raw), exchange(t, own, raw)
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Errorf("%s:\nnet/http: %+v\nhttp1:    %+v", path, want, got)
		}
	}
}
