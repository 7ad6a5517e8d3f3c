//go:build ownhttp

package outbound_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
)

// rawServer accepts connections on loopback and serves each with serve,
// which reads requests from br and writes replies to c itself. conns
// counts the connections accepted.
type rawServer struct {
	ln    net.Listener
	conns atomic.Int64
}

func newRawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/tool?x=1" }

// echoReplies answers every request of the connection with its body, a
// Content-Length reply, until the client closes.
func echoReplies(c net.Conn, br *bufio.Reader) {
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		resp := &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, ContentLength: int64(len(body)),
			Header: http.Header{"Content-Type": {"application/json"}, "X-Uri": {req.RequestURI}, "X-Key": {req.Header.Get("Idempotency-Key")}},
			Body:   io.NopCloser(strings.NewReader(string(body)))}
		if err := resp.Write(c); err != nil {
			return
		}
	}
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, url, body string, hdr ...string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestTransportReusesOneConnection(t *testing.T) {
	s := newRawServer(t, echoReplies)
	tr := outbound.NewTransport()
	defer tr.CloseIdleConnections()
	for i := range 20 {
		resp, body, err := post(t, tr, context.Background(), s.url(), `{"i":1}`)
		if err != nil || body != `{"i":1}` || resp.Header.Get("X-Uri") != "/tool?x=1" {
			t.Fatalf("call %d: %v %q %v", i, err, body, resp)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("20 sequential calls used %d connections, want 1", n)
	}
}

func TestTransportChunkedAnd1xx(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n")
		}
	})
	tr := outbound.NewTransport()
	for range 3 {
		resp, body, err := post(t, tr, context.Background(), s.url(), "{}")
		if err != nil || resp.StatusCode != 200 || body != "abcde" || resp.Trailer.Get("X-T") != "1" {
			t.Fatalf("got %v %q %v", err, body, resp)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("chunked replies read to their end: %d connections, want 1", n)
	}
}

// A server that closes a keep-alive connection while it is idle (a
// shorter idle timeout than ours): the next request sees it closed and
// takes a new connection instead of failing.
func TestTransportDropsConnectionClosedWhileIdle(t *testing.T) {
	closed := make(chan struct{}, 5)
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") // keep-alive, then closed
		c.Close()
		closed <- struct{}{}
	})
	tr := outbound.NewTransport()
	for i := range 5 {
		// no Idempotency-Key: a POST that may not be sent twice
		if _, body, err := post(t, tr, context.Background(), s.url(), "{}"); err != nil || body != "ok" {
			t.Fatalf("call %d: %v %q", i, err, body)
		}
		// Closed while idle, not while the next request is on its way
		// (that race no transport can win for a POST).
		<-closed
	}
	if n := s.conns.Load(); n != 5 {
		t.Fatalf("%d connections, want 5", n)
	}
}

// The server takes the second request of a connection and closes without
// an answer: a request with an Idempotency-Key is sent again on a new
// connection (as http.Transport does); one without fails.
func TestTransportRetriesOnlyReplayableRequests(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if n == 1 {
				return // read, not answered
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	for _, tc := range []struct {
		hdr  []string
		fail bool
	}{{nil, true}, {[]string{"Idempotency-Key", "k1"}, false}} {
		tr := outbound.NewTransport()
		if _, _, err := post(t, tr, context.Background(), s.url(), "{}", tc.hdr...); err != nil {
			t.Fatal(err)
		}
		_, body, err := post(t, tr, context.Background(), s.url(), `{"a":1}`, tc.hdr...)
		if tc.fail != (err != nil) || !tc.fail && body != "ok" {
			t.Fatalf("headers %v: err %v body %q, want failure %v", tc.hdr, err, body, tc.fail)
		}
	}
}

func TestTransportCancelWhileWaiting(t *testing.T) {
	got := make(chan struct{})
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			close(got)
			io.Copy(io.Discard, br) // never answers; returns when the client closes
		}
	})
	tr := outbound.NewTransport()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-got; cancel() }()
	if _, _, err := post(t, tr, ctx, s.url(), "{}"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestTransportCancelWhileReadingBody(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
			io.Copy(io.Discard, br)
		}
	})
	tr := outbound.NewTransport()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url(), nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	resp.Body.Close()
}

// A body closed before its end closes the connection: the next request
// cannot read the rest of the old reply as its own.
func TestTransportEarlyCloseDropsConnection(t *testing.T) {
	s := newRawServer(t, echoReplies)
	tr := outbound.NewTransport()
	req, _ := http.NewRequest(http.MethodPost, s.url(), strings.NewReader("0123456789"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 2))
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after Close succeeded")
	}
	if _, body, err := post(t, tr, context.Background(), s.url(), "next"); err != nil || body != "next" {
		t.Fatalf("%v %q", err, body)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestTransportRefusesBadHeadersAndHugeReplyHeaders(t *testing.T) {
	var requests atomic.Int64
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			requests.Add(1)
			io.WriteString(c, "HTTP/1.1 200 OK\r\n")
			line := "X-Big: " + strings.Repeat("a", 1000) + "\r\n"
			for range 2000 { // 2 MB of header
				if _, err := io.WriteString(c, line); err != nil {
					return
				}
			}
		}
	})
	tr := outbound.NewTransport()
	_, _, err := post(t, tr, context.Background(), s.url(), "{}", "X-Plan", "a\r\nInjected: 1")
	if err == nil || !strings.Contains(err.Error(), "invalid header field value") {
		t.Fatalf("CRLF in a header value: %v", err)
	}
	if requests.Load() != 0 {
		t.Fatal("a request with a CRLF in a header was sent")
	}
	if _, _, err := post(t, tr, context.Background(), s.url(), "{}"); err == nil || !strings.Contains(err.Error(), "exceeded") {
		t.Fatalf("2 MB of reply header: %v", err)
	}
}

func TestTransportHTTPSGoesToStandardTransport(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	defer srv.Close()
	tr := outbound.NewTransport()
	// The test server's certificate is not trusted: the standard
	// transport's TLS check fails (the own path never speaks TLS).
	if _, _, err := post(t, tr, context.Background(), srv.URL, "{}"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("err %v, want a certificate error", err)
	}
}

// A request built by hand (not by http.NewRequest, which validates) with a
// line break in its method, URL or host is refused as http.Transport
// refuses it: written as is, it would add headers or a second request to
// a connection the pool reuses.
func TestTransportRefusesControlCharactersInRequestLine(t *testing.T) {
	var requests atomic.Int64
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			requests.Add(1)
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := outbound.NewTransport()
	defer tr.CloseIdleConnections()
	smuggled := " HTTP/1.1\r\nHost: x\r\n\r\nGET /smuggled"
	for name, edit := range map[string]func(*http.Request){
		"query":  func(r *http.Request) { r.URL.RawQuery = "x=1" + smuggled },
		"method": func(r *http.Request) { r.Method = "GET /tool" + smuggled },
		"host":   func(r *http.Request) { r.URL.Host += "\r\nX-Injected: 1" },
	} {
		req, err := http.NewRequest(http.MethodGet, s.url(), nil)
		if err != nil {
			t.Fatal(err)
		}
		edit(req)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
			t.Errorf("%s: sent", name)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the server read %d request(s)", n)
	}
}

// An empty Method means GET (http.Request's doc), as on http.Transport.
func TestTransportEmptyMethodIsGET(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(req.Method))+"\r\n\r\n"+req.Method)
	})
	tr := outbound.NewTransport()
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest("", s.url(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Method = ""
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "GET" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
}

// Close from another goroutine while a Read waits (the MCP SDK's way of
// ending a stream): the Read returns, nothing races, and the connection
// is not reused.
func TestTransportCloseDuringRead(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		}
	})
	tr := outbound.NewTransport()
	req, _ := http.NewRequest(http.MethodGet, s.url(), nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := resp.Body.Read(buf); read <- err }()
	resp.Body.Close()
	if err := <-read; err == nil {
		t.Fatal("a Read waiting when the body was closed returned no error")
	}
	req, _ = http.NewRequest(http.MethodGet, s.url(), nil)
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the closed one not reused)", n)
	}
}

// TestBodyEnded: a body of the own path says it ended once a read
// returned its end (and not before, nor when closed early or broken), so
// that a reader that stops at the message it wanted knows nothing is left
// to drain.
func TestBodyEnded(t *testing.T) {
	const stream = "event: message\ndata: {}\n\n"
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			// Chunked, the end in the same write as the data.
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
				strconv.FormatInt(int64(len(stream)), 16)+"\r\n"+stream+"\r\n0\r\n\r\n"); err != nil {
				return
			}
		}
	})
	tr := outbound.NewTransport()
	defer tr.CloseIdleConnections()
	type ender interface{ Ended() bool }
	get := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, s.url(), nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := resp.Body.(ender); !ok {
			t.Fatalf("body %T has no Ended", resp.Body)
		}
		return resp
	}

	resp := get()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	if resp.Body.(ender).Ended() {
		t.Error("Ended before the end was read")
	}
	resp.Body.Close()
	if resp.Body.(ender).Ended() {
		t.Error("Ended after closing before the end")
	}

	resp = get()
	buf = make([]byte, 4096)
	n, err := resp.Body.Read(buf) // the data and the end come in one read
	if string(buf[:n]) != stream || err != nil && err != io.EOF {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if err == nil {
		if n, err = resp.Body.Read(buf); n != 0 || err != io.EOF {
			t.Fatalf("read %d, %v after the data", n, err)
		}
	}
	if !resp.Body.(ender).Ended() {
		t.Error("not Ended after the end was read")
	}
	resp.Body.Close()
	// The connection went back to the pool: the next request reuses it.
	resp = get()
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c := s.conns.Load(); c != 2 {
		t.Errorf("%d connections, want 2 (the early close's, then one reused)", c)
	}
}

// A server may answer (413, 401) before it reads a large body, and never
// read it: the caller gets that answer, as from http.Transport, not a
// write that waits for the server until the call's deadline.
func TestTransportEarlyAnswerToLargeBody(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n")
		<-hold // neither reads the body nor closes
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, size := range []int{60 << 10, 16 << 20} { // below and above what the own path takes
		resp, body, err := post(t, outbound.NewTransport(), ctx, s.url(), strings.Repeat("x", size))
		if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || body != "too big\n" {
			t.Fatalf("a %d-byte body the server answers early: %v %q, %v; want 413 %q", size, resp, body, err, "too big\n")
		}
	}
}
