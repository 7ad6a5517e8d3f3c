//go:build ownhttp

package outbound

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Transport is the http.RoundTripper of every outbound client.
//
// A plain-HTTP request of known length (at most maxOwnBody) that goes to
// its host directly (no proxy) runs on the caller's goroutine over
// Transport's own pool of HTTP/1.1 keep-alive connections: the request is
// written from one buffer and the response read with http.ReadResponse.
// Everything else (https, proxies, bodies of unknown length or larger than
// maxOwnBody, Expect, trailers) goes to the wrapped *http.Transport.
//
// Why not http.Transport for all: it hands every request to a per-connection
// write goroutine and every response from a read goroutine that also keeps
// a read pending on idle connections. Under load on two cores, those
// goroutine switches and the extra reads were the largest part of a routed
// call: a bare reverse proxy (net/http server) cost 122–170 µs of CPU per
// call with http.Transport and 73–95 µs with this path, pinned and
// interleaved against the same echo tool (bench/compare.sh setup).
//
// What http.Transport's read goroutine did for idle connections is done at
// reuse: a connection the server closed while idle is seen with one
// non-blocking peek and dropped, and a request that fails on a reused
// connection before any response byte arrives is sent once more on a new
// connection when http.Transport would retry it too (nothing written yet,
// or a replayable request: idempotent method or Idempotency-Key header,
// with a body that can be rewound).
type Transport struct {
	std    *http.Transport
	dialer *net.Dialer

	mu    sync.Mutex
	hosts map[string]*hostPool // by host:port
	idle  int                  // idle connections of every host
}

// Limits of the own path, as the wrapped transport's (newStd).
const (
	maxHeaderBytes  = 1 << 20
	max1xxResponses = 5
	// maxOwnBody is the largest request body the own path sends. It
	// writes a request whole before it reads, so a body must fit in the
	// sockets' buffers: a server that answers early (413, 401) without
	// reading a larger one would leave the write waiting until the call's
	// deadline. http.Transport reads while it writes, and takes those.
	maxOwnBody = 64 << 10
)

// hostPool is the idle connections to one host:port, newest last; direct
// is false when requests to it go through a proxy (the wrapped transport).
type hostPool struct {
	direct bool
	idle   []*persistConn
}

// NewTransport is the tuned transport of every outbound client (newStd),
// with the own path in front of it.
func NewTransport() *Transport {
	dialer := newDialer()
	return &Transport{dialer: dialer, hosts: map[string]*hostPool{}, std: newStd(dialer)}
}

// CloseIdleConnections closes the idle connections of both paths.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*persistConn
	for _, h := range t.hosts {
		idle = append(idle, h.idle...)
		h.idle = nil
	}
	t.idle = 0
	t.mu.Unlock()
	for _, pc := range idle {
		pc.close()
	}
	t.std.CloseIdleConnections()
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	addr, ok := t.ownPath(req)
	if !ok {
		return t.std.RoundTrip(req)
	}
	if err := validHeaders(req); err != nil {
		closeReqBody(req)
		return nil, err
	}
	for retried := false; ; retried = true {
		pc, err := t.conn(req.Context(), addr, retried)
		if err != nil {
			closeReqBody(req)
			return nil, err
		}
		resp, err := t.send(pc, req)
		if err == nil {
			return resp, nil
		}
		if retried || !pc.reused || pc.nread > 0 || !rewindable(req, pc.nwritten == 0) || req.Context().Err() != nil {
			closeReqBody(req)
			return nil, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			body, gerr := req.GetBody() // the first attempt read the body
			if gerr != nil {
				return nil, err
			}
			req = req.Clone(req.Context()) // a RoundTripper must not change its request
			req.Body = body
		}
	}
}

// ownPath tells whether req takes the own path, and its host:port.
func (t *Transport) ownPath(req *http.Request) (string, bool) {
	u := req.URL
	if u == nil || u.Scheme != "http" || u.Host == "" || req.Method == http.MethodConnect ||
		len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 || req.Header.Get("Expect") != "" ||
		req.Body != nil && req.Body != http.NoBody && (req.ContentLength <= 0 || req.ContentLength > maxOwnBody) {
		return "", false
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	t.mu.Lock()
	h := t.hosts[addr]
	t.mu.Unlock()
	if h == nil {
		proxy, err := t.std.Proxy(req)
		h = &hostPool{direct: err == nil && proxy == nil}
		t.mu.Lock()
		if h2 := t.hosts[addr]; h2 != nil {
			h = h2
		} else {
			t.hosts[addr] = h
		}
		t.mu.Unlock()
	}
	return addr, h.direct
}

// rewindable tells whether req may be sent again after a failure on a
// reused connection, by http.Transport's rules.
func rewindable(req *http.Request, nothingWritten bool) bool {
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody && req.GetBody == nil {
		return false
	}
	if nothingWritten {
		return true
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// validHeaders refuses what http.Transport refuses: a method, request
// URI, host, header names and values that would break the request's
// framing.
func validHeaders(req *http.Request) error {
	if req.Method != "" && (strings.IndexFunc(req.Method, func(r rune) bool { return !httpguts.IsTokenRune(r) }) >= 0) {
		return fmt.Errorf("net/http: invalid method %q", req.Method)
	}
	if strings.IndexFunc(req.URL.RequestURI(), func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
		return errors.New("net/http: can't write control character in Request.URL")
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !httpguts.ValidHostHeader(host) {
		return errors.New("http: invalid Host header")
	}
	return nil
}

// conn is an idle connection to addr that is still open, or a new one.
func (t *Transport) conn(ctx context.Context, addr string, fresh bool) (*persistConn, error) {
	for !fresh {
		pc := t.takeIdle(addr)
		if pc == nil {
			break
		}
		if pc.alive() {
			pc.reused, pc.nread, pc.nwritten = true, 0, 0
			return pc, nil
		}
		pc.close()
	}
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &persistConn{t: t, addr: addr, c: c}
	pc.br = bufio.NewReaderSize(pc, 4<<10)
	pc.bw = bufio.NewWriterSize(pc, 4<<10)
	return pc, nil
}

func (t *Transport) takeIdle(addr string) *persistConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[addr]
	if h == nil || len(h.idle) == 0 {
		return nil
	}
	pc := h.idle[len(h.idle)-1]
	h.idle[len(h.idle)-1] = nil
	h.idle = h.idle[:len(h.idle)-1]
	t.idle--
	pc.idleTimer.Stop()
	return pc
}

// put keeps pc for the next request to its host, or closes it when the
// pool is full.
func (t *Transport) put(pc *persistConn) {
	t.mu.Lock()
	h := t.hosts[pc.addr]
	if h == nil || len(h.idle) >= maxIdlePerHost || t.idle >= maxIdle {
		t.mu.Unlock()
		pc.close()
		return
	}
	h.idle = append(h.idle, pc)
	t.idle++
	if pc.idleTimer == nil {
		pc.idleTimer = time.AfterFunc(idleTimeout, pc.expire)
	} else {
		pc.idleTimer.Reset(idleTimeout)
	}
	t.mu.Unlock()
}

// send writes req on pc and reads the response's header.
func (t *Transport) send(pc *persistConn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, pc.abort)
	}
	fail := func(err error) (*http.Response, error) {
		stop()
		pc.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := pc.writeRequest(req); err != nil {
		return fail(err)
	}
	pc.headerLeft = maxHeaderBytes
	var resp *http.Response
	for n := 0; ; n++ {
		var err error
		if resp, err = http.ReadResponse(pc.br, req); err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n == max1xxResponses {
			return fail(errors.New("net/http: too many 1xx informational responses"))
		}
	}
	pc.headerLeft = -1
	reuse := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody {
		pc.release(stop, reuse)
		return resp, nil
	}
	resp.Body = &bodyReader{ctx: ctx, pc: pc, rc: resp.Body, stop: stop, reuse: reuse}
	return resp, nil
}

// persistConn is one connection of the own path.
type persistConn struct {
	t         *Transport
	addr      string
	c         net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleTimer *time.Timer
	reused    bool
	// nread and nwritten count the bytes of the current request.
	nread, nwritten int64
	// headerLeft bounds what a response header may read (<0: no bound).
	headerLeft int64
}

var errHeaderTooLarge = errors.New("net/http: server response headers exceeded 1048576 bytes; aborted")

func (pc *persistConn) Read(p []byte) (int, error) {
	if pc.headerLeft >= 0 {
		if pc.headerLeft == 0 {
			return 0, errHeaderTooLarge
		}
		if int64(len(p)) > pc.headerLeft {
			p = p[:pc.headerLeft]
		}
	}
	n, err := pc.c.Read(p)
	pc.nread += int64(n)
	if pc.headerLeft >= 0 {
		pc.headerLeft -= int64(n)
	}
	return n, err
}

func (pc *persistConn) Write(p []byte) (int, error) {
	n, err := pc.c.Write(p)
	pc.nwritten += int64(n)
	return n, err
}

// writeRequest writes req's request line, header and body, as
// http.Request.Write would for an HTTP/1.1 request of known length.
func (pc *persistConn) writeRequest(req *http.Request) error {
	w := pc.bw
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if req.Method == "" {
		w.WriteString(http.MethodGet)
	} else {
		w.WriteString(req.Method)
	}
	w.WriteByte(' ')
	w.WriteString(req.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if _, ok := req.Header["User-Agent"]; !ok {
		w.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	switch {
	case hasBody:
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.FormatInt(req.ContentLength, 10))
		w.WriteString("\r\n")
	case req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch:
		w.WriteString("Content-Length: 0\r\n")
	}
	if req.Close {
		w.WriteString("Connection: close\r\n")
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(textproto.TrimString(v))
			w.WriteString("\r\n")
		}
	}
	w.WriteString("\r\n")
	if hasBody {
		n, err := io.Copy(w, io.LimitReader(req.Body, req.ContentLength))
		closeErr := req.Body.Close()
		if err != nil {
			return err
		}
		if n != req.ContentLength {
			return fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n)
		}
		if closeErr != nil {
			return closeErr
		}
	}
	return w.Flush()
}

// alive tells whether an idle connection can carry a request: nothing
// arrived on it while idle, neither data nor the server's close.
func (pc *persistConn) alive() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	sc, ok := pc.c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait
	})
	return err == nil && alive
}

// abort makes the connection's pending and future reads and writes fail
// (the request's context is done).
func (pc *persistConn) abort() { _ = pc.c.SetDeadline(time.Unix(1, 0)) }

func (pc *persistConn) close() { _ = pc.c.Close() }

// expire closes an idle connection nobody took within idleTimeout.
func (pc *persistConn) expire() {
	t := pc.t
	t.mu.Lock()
	h := t.hosts[pc.addr]
	found := false
	for i, idle := range h.idle {
		if idle == pc {
			h.idle = append(h.idle[:i], h.idle[i+1:]...)
			t.idle--
			found = true
			break
		}
	}
	t.mu.Unlock()
	if found {
		pc.close()
	}
}

// release ends a request on pc: back to the pool when its response was
// read whole and nothing aborted the connection, else closed.
func (pc *persistConn) release(stop func() bool, reuse bool) {
	if stop() && reuse {
		pc.t.put(pc)
		return
	}
	pc.close()
}

// bodyReader is a response body of the own path: its connection goes back
// to the pool when the body was read to its end, and is closed when it is
// closed before.
type bodyReader struct {
	ctx   context.Context
	pc    *persistConn
	rc    io.ReadCloser
	stop  func() bool
	reuse bool
	// mu guards done and err: Close may come from another goroutine
	// while a Read waits (as http.Transport's bodies allow); the Read
	// then fails, and the connection is closed, never pooled.
	mu   sync.Mutex
	done bool
	err  error
}

var errBodyClosed = errors.New("http: read on closed response body")

func (b *bodyReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	done, derr := b.done, b.err
	b.mu.Unlock()
	if done {
		if derr != nil {
			return 0, derr
		}
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.done: // closed while reading
		return n, b.err
	case err == io.EOF:
		b.done = true
		b.pc.release(b.stop, b.reuse)
	case err != nil:
		b.stop()
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr // the read failed because the request was cancelled
		}
		b.done, b.err = true, err
		b.pc.close()
	}
	return n, err
}

// Ended reports whether the body was read to its end, so that its
// connection is back in the pool and closing it costs nothing: a reader
// that stops at a message it wanted (an event stream's response) can tell,
// without reading, that nothing is left to drain.
func (b *bodyReader) Ended() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done && b.err == nil
}

func (b *bodyReader) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		// Not read to its end: the rest would have to be read before the
		// connection could carry another request; closing is cheaper.
		b.done, b.err = true, errBodyClosed
		b.stop()
		b.pc.close()
	}
	return nil
}
