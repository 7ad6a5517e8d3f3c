// Package http1 is toolrouterd's HTTP/1.1 server: net/http's request
// parser (http.ReadRequest) and handler interface, with a connection loop
// of its own.
//
// Why not http.Server: per request it starts a goroutine that keeps a read
// pending on the connection while the handler runs (to notice a client
// that goes away), and writes through two buffered layers. Pinned against
// one echo tool, a bare reverse proxy cost 90–103 µs of CPU per call on
// http.Server and 56–64 µs on this loop (nginx: 47–51 µs).
//
// What the pending read is for is kept, lazily: a handler still running
// WatchAfter after it read its whole body gets its connection watched, and
// its context is cancelled when the client closes it. Requests shorter than
// that (nearly all) never pay for it.
//
// The server speaks HTTP/1.0 and 1.1 over plain TCP: no TLS, no HTTP/2, no
// Hijack, no trailers. What it answers to malformed requests, header
// limits, Expect and keep-alive follows http.Server; the differential test
// holds the two side by side.
package http1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Server serves HTTP/1.x requests with Handler. Set its fields before
// Serve; a Server must not be copied.
type Server struct {
	Handler http.Handler
	// ReadHeaderTimeout bounds the reading of a request's header, from its
	// first byte (and of the first request from the connection's start).
	ReadHeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request of a connection.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (default 1 MiB).
	MaxHeaderBytes int
	// WatchAfter is how long a handler runs, its body read, before the
	// server watches its connection for the client's close (default 50ms).
	WatchAfter time.Duration
	// ErrorLog receives handler panics and accept errors (nil: log's
	// default logger, as http.Server).
	ErrorLog *log.Logger

	mu         sync.Mutex
	listeners  map[net.Listener]struct{}
	conns      map[*conn]struct{}
	onShutdown []func()
	closing    atomic.Bool
	date       atomic.Pointer[date]
}

// Connection states: new and idle connections may be closed by Shutdown;
// an active one finishes its request first.
const (
	stateIdle int32 = iota
	stateActive
	stateClosed
)

// maxPostHandlerRead is how much of a body the handler left unread is
// read to keep the connection (http.Server's figure).
const maxPostHandlerRead = 256 << 10

// RegisterOnShutdown registers f to run when Shutdown starts (streams that
// would otherwise keep their requests active).
func (s *Server) RegisterOnShutdown(f func()) {
	s.mu.Lock()
	s.onShutdown = append(s.onShutdown, f)
	s.mu.Unlock()
}

// Serve accepts connections on ln until Shutdown or Close, when it returns
// http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
		s.conns = map[*conn]struct{}{}
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: wait and go on, as
			// http.Server does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logf("http1: accept error: %v; retrying in %v", err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := &conn{s: s, nc: nc, headerLeft: -1}
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			nc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, runs the RegisterOnShutdown functions, closes
// idle connections and waits for active ones to finish their request, or
// for ctx (then it returns ctx's error and leaves them to Close).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	for _, f := range s.onShutdown {
		go f()
	}
	s.mu.Unlock()
	wait := time.Millisecond
	for {
		if s.closeIdle() {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// closeIdle closes the connections not serving a request; it reports
// whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			c.nc.Close()
			delete(s.conns, c)
		}
	}
	return len(s.conns) == 0
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.state.Store(stateClosed)
		c.nc.Close()
	}
	return nil
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

func (s *Server) watchAfter() time.Duration {
	if s.WatchAfter > 0 {
		return s.WatchAfter
	}
	return 50 * time.Millisecond
}

// conn is one client connection. Its Read feeds the request parser: it
// bounds a header and hands over the byte a watch read.
type conn struct {
	s     *Server
	nc    net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	state atomic.Int32

	headerLeft int64 // bytes a header may still read (<0: no bound)

	// The watch of a long request (see the package doc).
	mu        sync.Mutex
	watchT    *time.Timer
	inHandler bool
	bodyDone  bool
	watching  bool
	aborting  bool
	watchDone chan struct{}
	cancel    context.CancelFunc
	gone      bool // the client closed the connection during a handler
	held      [1]byte
	hasHeld   bool

	buf []byte // a response's body held back, reused
	// linger: the client may still be sending what the server will not
	// read; closing at once could reset the connection before the client
	// reads the answer.
	linger bool
}

var errHeaderTooLarge = errors.New("http1: request header too large")

func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	if c.hasHeld {
		c.hasHeld = false
		p[0] = c.held[0]
		c.mu.Unlock()
		return 1, nil
	}
	c.mu.Unlock()
	if c.headerLeft >= 0 {
		if c.headerLeft == 0 {
			return 0, errHeaderTooLarge
		}
		if int64(len(p)) > c.headerLeft {
			p = p[:c.headerLeft]
		}
	}
	n, err := c.nc.Read(p)
	if c.headerLeft >= 0 {
		c.headerLeft -= int64(n)
	}
	return n, err
}

func (c *conn) serve() {
	defer func() {
		if p := recover(); p != nil {
			c.s.logf("http1: panic serving %v: %v\n%s", c.nc.RemoteAddr(), p, stack())
		}
		if c.linger {
			c.lingerClose()
		}
		c.state.Store(stateClosed)
		c.nc.Close()
		if c.watchT != nil {
			c.watchT.Stop()
		}
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	}()
	c.br = bufio.NewReaderSize(c, 4<<10)
	c.bw = bufio.NewWriterSize(c.nc, 4<<10)
	remote := c.nc.RemoteAddr().String()
	for first := true; ; first = false {
		wait := c.s.IdleTimeout
		if first || wait <= 0 {
			wait = c.s.ReadHeaderTimeout
		}
		c.deadline(wait)
		// The bound counts from the request's first byte, some of which
		// the buffer may hold already.
		c.headerLeft = int64(c.s.maxHeaderBytes() + 4096 - c.br.Buffered()) // http.Server's slack for the request line
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		if !c.state.CompareAndSwap(stateIdle, stateActive) {
			return // Shutdown closed it
		}
		c.deadline(c.s.ReadHeaderTimeout)
		if !c.serveOne(remote) || c.s.closing.Load() {
			return
		}
		if !c.state.CompareAndSwap(stateActive, stateIdle) {
			return
		}
	}
}

// deadline sets the read deadline d from now (none when d is 0).
func (c *conn) deadline(d time.Duration) {
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	_ = c.nc.SetReadDeadline(t)
}

// serveOne reads one request and answers it; it reports whether the
// connection can carry another.
func (c *conn) serveOne(remote string) (keep bool) {
	req, err := http.ReadRequest(c.br)
	c.headerLeft = -1
	if err != nil {
		c.badRequest(err)
		return false
	}
	if code, msg := checkRequest(req); code != 0 {
		c.replyError(code, strconv.Itoa(code)+" "+http.StatusText(code)+": "+msg)
		return false
	}
	_ = c.nc.SetReadDeadline(time.Time{}) // the body's pace is the handler's (ResponseController)
	req.RemoteAddr = remote
	ctx, cancel := context.WithCancel(context.Background())
	req = req.WithContext(ctx)

	w := &response{c: c, req: req, header: make(http.Header, 4), contentLength: -1, buf: c.buf[:0],
		closeAfter: req.Close} // HTTP/1.0: Close unless it asked for keep-alive
	defer func() { c.buf = w.buf[:0] }()
	body := &requestBody{c: c, rc: req.Body}
	w.body = body
	if req.Body == http.NoBody {
		body.eof = true
	} else {
		if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 && strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			body.continueW = c.bw
		}
		req.Body = body
	}
	switch e := req.Header.Get("Expect"); {
	case e == "" || strings.EqualFold(e, "100-continue"):
	default:
		cancel()
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		fmt.Fprintf(c.bw, "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\nConnection: close\r\nDate: %s\r\n\r\n", c.s.now())
		_ = c.bw.Flush()
		return false
	}

	c.mu.Lock()
	c.inHandler, c.bodyDone, c.cancel, c.gone = true, body.eof, cancel, false
	// Under c.mu: the timer may fire before AfterFunc returns, and watch
	// reads c.watchT.
	if c.watchT == nil {
		c.watchT = time.AfterFunc(c.s.watchAfter(), c.watch)
	} else {
		c.watchT.Reset(c.s.watchAfter())
	}
	c.mu.Unlock()

	panicked := true
	defer func() {
		c.endHandler()
		cancel()
		if panicked {
			keep = false
			if p := recover(); p != nil && p != http.ErrAbortHandler {
				c.s.logf("http1: panic serving %s: %v\n%s", remote, p, stack())
			}
		}
	}()
	c.s.Handler.ServeHTTP(w, req)
	panicked = false

	keep = !req.Close
	switch {
	case body.continueW != nil || body.noContinue && !body.eof:
		keep = false // the client still holds the body back for a 100 Continue
	case !body.eof && req.ContentLength >= 0 && req.ContentLength-body.n > maxPostHandlerRead:
		keep, c.linger = false, true
	case !body.eof:
		// Read what the handler left, within bounds, to keep the connection.
		c.deadline(c.s.ReadHeaderTimeout)
		if n, err := io.CopyN(io.Discard, body.rc, maxPostHandlerRead+1); n > maxPostHandlerRead || err != io.EOF && err != nil {
			keep, c.linger = false, true
		}
	}
	c.mu.Lock()
	gone := c.gone
	c.mu.Unlock()
	if gone || c.s.closing.Load() || w.header.Get("Connection") == "close" {
		keep = false
	}
	w.closeAfter = !keep
	if err := w.finish(); err != nil {
		return false
	}
	return keep && !w.closeAfter
}

// checkRequest refuses what http.Server refuses after parsing: another
// protocol version, a missing or malformed Host, invalid header fields.
func checkRequest(req *http.Request) (int, string) {
	if req.ProtoMajor != 1 {
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	}
	// http.ReadRequest took the Host header out (into req.Host, the
	// first of them when there were several).
	switch {
	case req.ProtoAtLeast(1, 1) && req.Host == "" && req.Method != http.MethodConnect:
		return http.StatusBadRequest, "missing required Host header"
	case !httpguts.ValidHostHeader(req.Host):
		return http.StatusBadRequest, "malformed Host header"
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return http.StatusBadRequest, "invalid header name"
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return http.StatusBadRequest, "invalid header value"
			}
		}
	}
	return 0, ""
}

// badRequest answers a request that could not be parsed, as http.Server
// does, unless the client just went away or was too slow.
func (c *conn) badRequest(err error) {
	var oe *net.OpError
	switch {
	case err == io.EOF || isTimeout(err) || errors.As(err, &oe) && oe.Op == "read":
	case errors.Is(err, errHeaderTooLarge):
		c.replyError(http.StatusRequestHeaderFieldsTooLarge, "")
	case strings.Contains(err.Error(), "unsupported transfer encoding"):
		c.replyError(http.StatusNotImplemented, "Unsupported transfer encoding")
	default:
		c.replyError(http.StatusBadRequest, "")
	}
}

// replyError writes http.Server's plain answer to a request it refuses
// (body: the status, or text), then the connection is closed.
func (c *conn) replyError(code int, text string) {
	status := strconv.Itoa(code) + " " + http.StatusText(code)
	if text == "" {
		text = status
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c.bw, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n%s", status, text)
	_ = c.bw.Flush()
	c.linger = true
}

// lingerClose ends the connection's sending half, then reads and drops
// what the client still sends for up to half a second, as http.Server
// does, so that the client reads the answer instead of a reset.
func (c *conn) lingerClose() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = io.Copy(io.Discard, c.nc)
}

// watch starts a read on the connection of a handler that runs long after
// its body was read: the client's close cancels the request's context.
func (c *conn) watch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inHandler || c.watching || c.hasHeld {
		return
	}
	if !c.bodyDone || c.br.Buffered() > 0 {
		// The handler reads the body still (or the client sent the next
		// request already): look again later.
		c.watchT.Reset(c.s.watchAfter())
		return
	}
	c.watching = true
	c.watchDone = make(chan struct{})
	// The handler's read deadline was for its body, which it has read.
	_ = c.nc.SetReadDeadline(time.Time{})
	go c.watchRead(c.cancel, c.watchDone)
}

func (c *conn) watchRead(cancel context.CancelFunc, done chan struct{}) {
	var b [1]byte
	n, err := c.nc.Read(b[:])
	c.mu.Lock()
	if n == 1 {
		c.held[0], c.hasHeld = b[0], true // the next request's first byte
	} else if err != nil && !c.aborting && !isTimeout(err) {
		c.gone = true
		cancel()
	}
	c.watching = false
	c.mu.Unlock()
	close(done)
}

// endHandler stops the watch of the handler that returned.
func (c *conn) endHandler() {
	c.watchT.Stop()
	c.mu.Lock()
	c.inHandler = false
	if !c.watching {
		c.mu.Unlock()
		return
	}
	c.aborting = true
	done := c.watchDone
	c.mu.Unlock()
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	<-done
	_ = c.nc.SetReadDeadline(time.Time{})
	c.mu.Lock()
	c.aborting = false
	c.mu.Unlock()
}

// requestBody is a request's body: it notes its end (the watch may start)
// and sends 100 Continue before the first read of a body the client holds
// back for it.
type requestBody struct {
	c         *conn
	rc        io.ReadCloser
	continueW *bufio.Writer
	// noContinue: the answer's header went first, so no 100 Continue was
	// sent (it would land inside the answer), as http.Server.
	noContinue bool
	n          int64 // bytes read
	eof        bool
	closed     bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.continueW != nil {
		_, _ = b.continueW.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		_ = b.continueW.Flush()
		b.continueW = nil
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if err == io.EOF && !b.eof {
		b.c.mu.Lock()
		b.eof, b.c.bodyDone = true, true
		b.c.mu.Unlock()
	}
	return n, err
}

func (b *requestBody) Close() error {
	b.closed = true
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func stack() []byte {
	buf := make([]byte, 64<<10)
	return buf[:runtime.Stack(buf, false)]
}
