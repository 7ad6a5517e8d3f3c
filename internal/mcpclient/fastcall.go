package mcpclient

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by MCP 2026-07-28 (SEP-2577) and still served to servers of the older revisions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// The hot path of an MCP tool call (issue 10). The SDK's
// ClientSession.CallTool costs toolrouterd more CPU than the MCP server
// spends answering: every message it decodes goes through a JSON decoder
// that allocates a 32 KiB buffer, four times per call (the request's _meta
// looked up again before sending, the response event, the result, the
// result's content), plus a goroutine and channel hand-offs per response.
// bench/README.md has the measured gain (its decision table).
//
// So, on a streamable HTTP session with a protocol before 2026-07-28
// (session-based: initialize, Mcp-Session-Id), tools/call is sent here:
// one POST with the session's Mcp-Session-Id and MCP-Protocol-Version, its
// answer read as JSON or as a Server-Sent Events stream on the caller's
// goroutine, the result decoded once. Everything else stays with the SDK,
// which owns the session: initialize, tools/list, pings, logging/setLevel,
// the standalone GET stream and its notifications, DELETE on close. Calls
// on stdio servers and on 2026-07-28 sessions (per-request _meta, standard
// headers, which the hot path does not write) also go through the SDK.
// Tracing changes nothing here: the hot path runs under the same tracing
// middleware as the SDK's calls (fastCall). Its stream is read once: not
// through the transport's progress tap (untapped), its parser handing the
// notifications on (notify); its messages are decoded as the SDK decodes
// them, by segmentio's decoder (decodeWire), and its request encoded by
// segmentio's encoder to encoding/json's bytes (encodeCall).
//
// Like the SDK, the hot path answers the requests a server sends on the
// call's stream (ping, roots/list; sampling and elicitation are refused, as
// toolrouterd does not advertise them), sends notifications/cancelled when
// the call is abandoned, and resumes a stream the server ended before the
// response when it gave event ids (GET with Last-Event-ID). Progress and
// log notifications on the stream are relayed by serverTransport's tap as
// for the SDK's calls.
//
// When this file goes: it is a second client beside a well-kept one, and
// stays only while it wins the decision table's rule (bench/README.md
// "Hand-written twins: decision table"). Delete it, with sdkonly*.go and
// the sdkmcp build tag, as soon as `make bench-compare` (its default
// BENCH_ABLATE=sdk-mcp:sdkmcp builds the SDK-only ablation;
// BENCH_ONLY='^mcp-router' measures just the two rows) shows
// mcp-router[sdk-mcp], the SDK's tools/call path, within 5 % of
// mcp-router in CPU per call (median of the rounds, or inside their
// spread): e.g. after a go-sdk upgrade that drops the per-message 32 KiB
// decoder buffers or the goroutine per response. Measure again at every
// go-sdk upgrade. Delete it too, rather than grow it, the day HTTP
// sessions before 2026-07-28 need a feature of the SDK's path that this
// one does not carry.

// fastIDBase is the first JSON-RPC id of the hot path's requests; the
// SDK numbers its own requests on the session from 1, so the two never
// collide.
const fastIDBase = 1 << 40

// maxFastMessage bounds one JSON-RPC message read on the hot path: the
// SDK's bound of an event (its path reads no larger result), which is
// also the cap of an HTTP tool's reply.
const maxFastMessage = mcp.DefaultMaxEventSize

// fastResumeAttempts bounds the reconnections of a call's stream that
// bring no new event (the SDK's default too).
const fastResumeAttempts = 5

// cancelNotifyTimeout bounds the best-effort notifications/cancelled.
const cancelNotifyTimeout = 5 * time.Second

var errTerminated = errors.New("request terminated without response")

// errCallTaken marks the failure of a call the server took (its stream
// began) and whose stream could not be resumed: the tool may have run, so
// the call must not be sent again as if it never reached the server, even
// when the resumption found the session gone or the server unreachable.
var errCallTaken = errors.New("the server took the call, then its stream could not be resumed")

// fast reports whether calls on cs take the hot path.
func (s *server) fast(cs *mcp.ClientSession) bool {
	if len(s.command) > 0 || s.m.sdkCalls {
		return false
	}
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion != "" && ir.ProtocolVersion < "2026-07-28"
}

// callRequest is a tools/call request on the wire.
type callRequest struct {
	JSONRPC string              `json:"jsonrpc"`
	ID      int64               `json:"id"`
	Method  string              `json:"method"`
	Params  *mcp.CallToolParams `json:"params"`
}

// wireMessage is any JSON-RPC message a server sends: a response (ID with
// Result or Error), a request (ID and Method) or a notification (Method).
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

// fastSession is what the hot path needs of a session.
type fastSession struct {
	id      string // Mcp-Session-Id, "" when the server gave none
	version string // negotiated protocol version
}

// fastCall sends one tools/call and returns its outcome; an error is
// what CallTool would have returned (a *jsonrpc.Error from the server,
// mcp.ErrSessionMissing, a transport failure, or the context's error).
// With tracing on, the call runs under the same sending middleware
// (Manager.Trace) as the SDK's calls, on the same request and result
// types: the same code runs, and the same span is made, traced or not.
func (s *server) fastCall(ctx context.Context, cs *mcp.ClientSession, t *toolrouter.Tool, params *mcp.CallToolParams) (toolrouter.Outcome, error) {
	if s.m.Trace == nil {
		out, _, err := s.fastSend(ctx, cs, t, params)
		return out, err
	}
	var out toolrouter.Outcome
	send := s.m.Trace(func(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		var isError bool
		var err error
		out, isError, err = s.fastSend(ctx, cs, t, req.GetParams().(*mcp.CallToolParams))
		if err != nil {
			return nil, err
		}
		// What the middleware reads of a result (telemetry.endMCP).
		return &mcp.CallToolResult{IsError: isError}, nil
	})
	_, err := send(ctx, "tools/call", &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: params})
	return out, err
}

// fastSend is fastCall's request and result; isError is the result's.
func (s *server) fastSend(ctx context.Context, cs *mcp.ClientSession, t *toolrouter.Tool, params *mcp.CallToolParams) (out toolrouter.Outcome, isError bool, err error) {
	sess := fastSession{id: cs.ID(), version: cs.InitializeResult().ProtocolVersion}
	id := fastIDBase + s.callIDs.Add(1)
	body, err := encodeCall(id, params)
	if err != nil {
		return out, false, fmt.Errorf("sending \"tools/call\": %w", err)
	}
	raw, err := s.roundTrip(ctx, sess, id, body)
	if err != nil {
		if ctx.Err() != nil {
			s.notifyCancelled(ctx, sess, id)
			return out, false, ctx.Err()
		}
		return out, false, err
	}
	return fastOutcome(t, raw)
}

// encodeCall is the tools/call request id with params on the wire: the
// bytes of encoding/json (whose encoding the router's ArgsJSON has,
// TestEncodeCallAsEncodingJSON), made by segmentio's encoder, which the
// module has for the SDK, in about half the instructions.
func encodeCall(id int64, params *mcp.CallToolParams) ([]byte, error) {
	return segjson.Marshal(callRequest{JSONRPC: "2.0", ID: id, Method: "tools/call", Params: params})
}

// header is the header of a request on session sess.
func (sess fastSession) header(accept string) http.Header {
	h := http.Header{
		"Accept":               {accept},
		"Mcp-Protocol-Version": {sess.version},
	}
	if sess.id != "" {
		h[sessionIDHeader] = []string{sess.id}
	}
	return h
}

// postAccept is the Accept of the hot path's POSTs.
const postAccept = "application/json, text/event-stream"

// sessionHeader is the header of the hot path's POSTs on one session.
type sessionHeader struct {
	sess fastSession
	h    http.Header
}

// postHeader is the header of a POST on session sess: the session's
// headers, the server's (setHeaders: it spares serverTransport a copy of
// the request) and a User-Agent. It is made once per session and copied
// for each request (a map and one slice of values: three allocations at
// most, where making it took seven).
func (s *server) postHeader(sess fastSession) http.Header {
	if sh := s.postHdr.Load(); sh != nil && sh.sess == sess {
		return sh.h.Clone()
	}
	h := sess.header(postAccept)
	h["Content-Type"] = []string{"application/json"}
	s.transport.setHeaders(h)
	s.postHdr.Store(&sessionHeader{sess: sess, h: h})
	return h.Clone()
}

// post sends a JSON-RPC message to the server.
func (s *server) post(ctx context.Context, sess fastSession, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = s.postHeader(sess)
	setCredential(ctx, req.Header)
	return s.hot.Do(req)
}

// roundTrip posts the call and reads the server's answer to it: the raw
// result, or an error.
func (s *server) roundTrip(ctx context.Context, sess fastSession, id int64, body []byte) (json.RawMessage, error) {
	scope := newReqScope(ctx)
	defer scope.end()
	resp, err := s.post(scope.ctx, sess, body)
	if err != nil {
		return nil, fmt.Errorf("sending \"tools/call\": %w", err)
	}
	if err := checkStatus(resp, sess); err != nil {
		return nil, err
	}
	if sid := resp.Header.Get(sessionIDHeader); sid != "" && sess.id != "" && sid != sess.id {
		resp.Body.Close()
		return nil, fmt.Errorf("mismatching session IDs %q and %q", sess.id, sid)
	}
	want := strconv.AppendInt(nil, id, 10)
	switch mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.ToLower(strings.TrimSpace(mt)) {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxFastMessage+1))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("tools/call: failed to read body: %w", err)
		}
		if len(data) > maxFastMessage {
			return nil, fmt.Errorf("tools/call: response larger than %d bytes", maxFastMessage)
		}
		raw, done, err := s.handleMessage(ctx, sess, want, data)
		if err != nil || done {
			return raw, err
		}
		return nil, errTerminated
	case "text/event-stream":
		return s.readStream(ctx, sess, want, resp, scope)
	default:
		resp.Body.Close()
		return nil, fmt.Errorf("tools/call: unsupported content type %q", resp.Header.Get("Content-Type"))
	}
}

// checkStatus turns a reply that is not a success into the error the SDK
// would return for it (and closes its body); nil for a success.
func checkStatus(resp *http.Response, sess fastSession) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
			resp.Body.Close()
			return fmt.Errorf("tools/call: unexpected status %d for a request", resp.StatusCode)
		}
		return nil
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return fmt.Errorf("sending \"tools/call\": %s", http.StatusText(resp.StatusCode))
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var m wireMessage
	if json.Unmarshal(data, &m) == nil && m.Error != nil {
		return fmt.Errorf("sending \"tools/call\": %w: %s", m.Error, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusNotFound && sess.id != "" {
		return fmt.Errorf("sending \"tools/call\": failed to connect (session ID: %v): %w", sess.id, mcp.ErrSessionMissing)
	}
	return fmt.Errorf("sending \"tools/call\": %s", http.StatusText(resp.StatusCode))
}

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// readStream reads the call's event stream until the response to it,
// resuming the stream when the server ends it early with event ids.
func (s *server) readStream(ctx context.Context, sess fastSession, want []byte, resp *http.Response, scope *reqScope) (json.RawMessage, error) {
	br := readerPool.Get().(*bufio.Reader)
	defer readerPool.Put(br)
	p := sseParser{r: br}
	prevID, stalls := "", 0
	for {
		raw, done, err := s.drainStream(ctx, sess, want, resp, &p, scope)
		scope = nil // a resumed stream's request has ctx
		if done || err != nil {
			return raw, err
		}
		// The stream ended without the response: resume it if it can be.
		if p.lastID == "" {
			return nil, errTerminated
		}
		if p.lastID != prevID {
			prevID, stalls = p.lastID, 0
		} else if stalls++; stalls > fastResumeAttempts {
			return nil, fmt.Errorf("tools/call: exceeded %d retries without progress (session ID: %v)", fastResumeAttempts, sess.id)
		}
		resp, err = s.resume(ctx, sess, p.lastID, p.retry)
		if err != nil {
			return nil, fmt.Errorf("tools/call: %w: %w", errCallTaken, err)
		}
	}
}

// drainStream reads one response body of the call's stream; done when it
// held the call's response.
func (s *server) drainStream(ctx context.Context, sess fastSession, want []byte, resp *http.Response, p *sseParser, scope *reqScope) (raw json.RawMessage, done bool, err error) {
	defer func() {
		p.r.Reset(nil)
		if !done {
			// At the end of the body, or broken.
			resp.Body.Close()
			return
		}
		if ended(resp.Body) {
			// The end of the stream came with the response (the usual
			// case): nothing to drain, the connection is back in the
			// pool already.
			resp.Body.Close()
			return
		}
		// Read the rest (the end of the stream, which the server sends
		// once the response is out) so that the connection can be reused,
		// without making the caller wait for it.
		scope.drain(resp.Body, s.drains)
	}()
	resp.Body = &eofBody{ReadCloser: resp.Body}
	p.r.Reset(resp.Body)
	for {
		name, data, err := p.next()
		if err != nil {
			if errors.Is(err, errEventTooLarge) {
				return nil, false, fmt.Errorf("tools/call: %w", err)
			}
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			return nil, false, nil // the stream ended (or broke): resume
		}
		if len(data) == 0 {
			continue
		}
		if name != "" && name != "message" {
			s.notify(ctx, data) // as the tap did for every event
			continue
		}
		raw, done, err := s.handleMessage(ctx, sess, want, data)
		if err != nil || done {
			return raw, done, err
		}
	}
}

// ended reports whether body says it was read to its end (eofBody, which
// drainStream puts around every stream, does; sseTap and the other
// wrappers pass it on): then a call's stream needs no drain. Without it,
// the end of the stream would be "drained" by a goroutine with a timer
// even when it was read already.
func ended(body io.ReadCloser) bool {
	e, ok := body.(interface{ Ended() bool })
	return ok && e.Ended()
}

// drainTimeout bounds how long the end of a call's stream is waited for
// after its response; maxDrains how many such ends of one server are read
// at once: a server that keeps its streams open after the response holds
// at most that many connections and goroutines, the others are closed.
const (
	drainTimeout = 10 * time.Second
	maxDrains    = 64
)

// reqScope is the context of a call's POST: cancelled with the call's
// context while the call waits for its response, but not when the call
// returns with it, so that the end of the stream, which usually arrives
// just after the response, is still read and the connection reused (a
// request cancelled before the end of its body closes its connection).
type reqScope struct {
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool // stops following the call's context
	handed bool        // the cancel belongs to drain's goroutine
}

func newReqScope(ctx context.Context) *reqScope {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &reqScope{ctx: rctx, cancel: cancel, stop: context.AfterFunc(ctx, cancel)}
}

// end releases the scope unless drain took it over.
func (sc *reqScope) end() {
	if !sc.handed {
		sc.stop()
		sc.cancel()
	}
}

// drain reads the rest of body and closes it, in the background, within
// drainTimeout, when one of slots is free (it closes body at once
// otherwise). sc may be nil (a request made with the call's context).
func (sc *reqScope) drain(body io.ReadCloser, slots chan struct{}) {
	select {
	case slots <- struct{}{}:
	default:
		body.Close()
		return
	}
	cancel := func() {}
	if sc != nil {
		if !sc.stop() { // the call's context is done: so is the request's
			body.Close()
			<-slots
			return
		}
		sc.handed, cancel = true, sc.cancel
	}
	go func() {
		defer func() { <-slots }()
		t := time.AfterFunc(drainTimeout, cancel)
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 1<<20))
		body.Close()
		t.Stop()
		cancel()
	}()
}

// resume reconnects to the call's stream after lastID.
func (s *server) resume(ctx context.Context, sess fastSession, lastID string, retry time.Duration) (*http.Response, error) {
	delay := retry
	var last error
	for attempt := 1; attempt <= fastResumeAttempts; attempt++ {
		if delay <= 0 {
			d := time.Second << (attempt - 1)
			delay = d + rand.N(d)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = 0
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
		if err != nil {
			return nil, err
		}
		req.Header = sess.header("text/event-stream")
		req.Header["Last-Event-Id"] = []string{lastID}
		resp, err := s.hot.Do(req)
		if err != nil {
			last = err
			continue
		}
		if err := checkStatus(resp, sess); err != nil {
			return nil, err
		}
		return resp, nil
	}
	return nil, fmt.Errorf("tools/call: failed to reconnect (session ID: %v): %w", sess.id, last)
}

// handleMessage handles one message of the call's answer: the response
// to the call (done, with its raw result or its error), a request from
// the server (answered), a notification (tools/list_changed rediscovers;
// progress and log messages were relayed by the tap), or a response to
// something else (ignored).
func (s *server) handleMessage(ctx context.Context, sess fastSession, want, data []byte) (json.RawMessage, bool, error) {
	var m wireMessage
	if err := decodeWire(data, &m); err != nil {
		return nil, false, fmt.Errorf("tools/call: failed to decode event: %w", err)
	}
	id := bytes.TrimSpace(m.ID)
	hasID := len(id) > 0 && !bytes.Equal(id, []byte("null"))
	switch {
	case m.Method != "" && hasID:
		s.answer(ctx, sess, id, m.Method)
	case m.Method == "notifications/tools/list_changed":
		s.m.log.Debug().Str("mcp_server", s.name).Msg("MCP server tool list changed")
		s.poke()
	case m.Method != "":
		s.notify(ctx, data)
	case m.Method == "" && bytes.Equal(id, want):
		if m.Error != nil {
			return nil, true, fmt.Errorf("calling \"tools/call\": %w", m.Error)
		}
		if len(m.Result) == 0 {
			return nil, true, errors.New("calling \"tools/call\": a response with neither result nor error")
		}
		return m.Result, true, nil
	}
	return nil, false, nil
}

// notify hands the data of a notification on a call's stream to what the
// transport's tap (sseTap) would have: the progress of running calls, and
// the log messages of the call's relay. The hot path reads its streams
// without the tap (untapped), in their order, so a call's progress still
// comes before its result.
func (s *server) notify(ctx context.Context, data []byte) {
	s.m.progressEvent(data)
	if relay := callRelay(ctx); relay != nil && relay.Log != nil {
		relayLog(relay, data)
	}
}

// eofBody is a response body that remembers whether it was read to its
// end: net/http's reader of a chunked body returns io.EOF with the last
// data when the end of the stream came with it, and the connection is
// then back in the pool, so that the call need not drain it.
type eofBody struct {
	io.ReadCloser
	eof bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Ended reports whether the body was read to its end.
func (b *eofBody) Ended() bool { return b.eof || ended(b.ReadCloser) }

// answer replies to a request the server sent on a call's stream, as the
// SDK's client would: ping, roots/list; the rest is refused.
func (s *server) answer(ctx context.Context, sess fastSession, id json.RawMessage, method string) {
	type reply struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *jsonrpc.Error  `json:"error,omitempty"`
	}
	r := reply{JSONRPC: "2.0", ID: id}
	switch method {
	case "ping":
		r.Result = struct{}{}
	case "roots/list":
		roots := make([]*mcp.Root, 0, len(s.roots))
		for _, uri := range s.roots {
			roots = append(roots, &mcp.Root{URI: uri})
		}
		r.Result = &mcp.ListRootsResult{Roots: roots}
	case "sampling/createMessage":
		r.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "client does not support CreateMessage"}
	case "elicitation/create":
		r.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "client does not support elicitation"}
	default:
		r.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
	}
	body, err := json.Marshal(r)
	if err != nil {
		return
	}
	resp, err := s.post(ctx, sess, body)
	if err != nil {
		s.m.log.Debug().Str("mcp_server", s.name).Str("error", s.scrub(err)).Str("method", method).Msg("could not answer the MCP server's request")
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}

// notifyCancelled tells the server, in the background, that the caller
// gave up call id (as the SDK does).
func (s *server) notifyCancelled(ctx context.Context, sess fastSession, id int64) {
	reason := ctx.Err().Error()
	go func() {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNotifyTimeout)
		defer cancel()
		body, err := json.Marshal(map[string]any{
			"jsonrpc": "2.0",
			"method":  "notifications/cancelled",
			"params":  map[string]any{"requestId": id, "reason": reason},
		})
		if err != nil {
			return
		}
		resp, err := s.post(nctx, sess, body)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}()
}

var errEventTooLarge = fmt.Errorf("SSE event exceeded %d bytes", maxFastMessage)

// sseParser reads Server-Sent Events (the WHATWG event stream format).
type sseParser struct {
	r      *bufio.Reader
	data   []byte // the current event's data
	long   []byte // a line longer than the reader's buffer
	name   string
	idBuf  string // the last id field read
	lastID string // idBuf as of the last event's end: what a resumption follows
	retry  time.Duration
}

// next returns the next event with data or a name; its data is valid
// until the following call. At the end of the stream it returns the
// reader's error (io.EOF): an unfinished event is dropped, as the format
// requires.
func (p *sseParser) next() (name string, data []byte, err error) {
	p.data, p.name = p.data[:0], ""
	hasData := false
	for {
		line, err := p.readLine()
		if err != nil {
			return "", nil, err
		}
		if len(line) == 0 { // the end of an event
			// Only an event that ended moves the last event ID (WHATWG):
			// a stream cut inside an event resumes before it.
			p.lastID = p.idBuf
			if hasData {
				return p.name, p.data, nil
			}
			p.name = ""
			continue
		}
		if line[0] == ':' { // a comment
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if len(p.data)+len(value)+1 > maxFastMessage {
				return "", nil, errEventTooLarge
			}
			if hasData {
				p.data = append(p.data, '\n')
			}
			p.data = append(p.data, value...)
			hasData = true
		case "event":
			p.name = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.idBuf = string(value)
			}
		case "retry":
			if n, err := strconv.ParseInt(string(value), 10, 64); err == nil && n >= 0 {
				p.retry = time.Duration(n) * time.Millisecond
			}
		}
	}
}

// readLine returns the next line without its end (LF or CRLF); a last
// line without an end is returned too, the error coming with the next
// call.
func (p *sseParser) readLine() ([]byte, error) {
	line, err := p.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		p.long = append(p.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(p.long) > maxFastMessage {
				return nil, errEventTooLarge
			}
			line, err = p.r.ReadSlice('\n')
			p.long = append(p.long, line...)
		}
		line = p.long
	}
	if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, nil
}

// wireResult is what the hot path reads of a CallToolResult.
type wireResult struct {
	Content           []wireContent   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	ResultType        string          `json:"resultType"`
}

type wireContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// fastOutcome is outcome for a result as the server sent it (raw): the
// same Outcome, with raw itself as the MCPResult. Only a result whose
// content is text (the common case) is read here; any other goes through
// the SDK's CallToolResult and outcome.
func fastOutcome(t *toolrouter.Tool, raw json.RawMessage) (toolrouter.Outcome, bool, error) {
	var res wireResult
	if err := decodeWire(raw, &res); err != nil {
		return toolrouter.Outcome{}, false, fmt.Errorf("calling \"tools/call\": %w", err)
	}
	simple := res.ResultType == "" || res.ResultType == "complete"
	for _, c := range res.Content {
		simple = simple && c.Type == "text"
	}
	if !simple {
		var full mcp.CallToolResult
		if err := json.Unmarshal(raw, &full); err != nil {
			return toolrouter.Outcome{}, false, fmt.Errorf("calling \"tools/call\": %w", err)
		}
		out := outcome(t, &full)
		if out.MCPResult != nil {
			out.MCPResult = raw
		}
		return out, full.IsError, nil
	}
	var text string
	hasText := len(res.Content) > 0
	if len(res.Content) == 1 {
		text = res.Content[0].Text
	} else if hasText {
		parts := make([]string, len(res.Content))
		for i, c := range res.Content {
			parts[i] = c.Text
		}
		text = strings.Join(parts, "\n")
	}
	if res.IsError {
		return toolError(text, raw), true, nil
	}
	structured := res.StructuredContent
	if bytes.Equal(bytes.TrimSpace(structured), []byte("null")) {
		structured = nil
	}
	if out, ok := checkOutput(t, structured != nil, func() (any, error) {
		var sc any
		err := json.Unmarshal(structured, &sc)
		return sc, err
	}); !ok {
		return out, false, nil
	}
	out := toolrouter.Outcome{Answered: true, MCPResult: raw}
	switch {
	case structured != nil:
		out.Output = compact(structured)
	case hasText:
		out.Output = textOutput(text)
	default:
		out.Output = json.RawMessage("null")
	}
	return out, false, nil
}

// maxWireDepth bounds the nesting of a message the hot path decodes: the
// SDK's bound (its internal/json), so that the two paths refuse the same
// messages, and a bound segmentio's parser, which recurses, needs.
const maxWireDepth = 1000

var errWireDepth = fmt.Errorf("json: exceeded maximum nesting depth of %d", maxWireDepth)

// decodeWire decodes a message (or a result) from the server into v with
// the decoder the SDK's path decodes it with (segmentio's, keys matched
// exactly, nesting bounded alike), so that both paths read a message the
// same way. It is one pass over the bytes, where encoding/json made two
// (a validity scan, then the decode). Trailing bytes other than white
// space are an error, as for encoding/json.
func decodeWire(data []byte, v any) error {
	// JSON text nests at most half its length deep: a short message needs
	// no scan. (Invalid text is refused by the parser either way.)
	if len(data) > 2*maxWireDepth && !toolrouter.JSONDepthWithin(data, maxWireDepth) {
		return errWireDepth
	}
	rest, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("json: invalid character %q after top-level value", rest[0])
	}
	return err
}

// compact is raw without insignificant whitespace (raw itself when it has
// none).
func compact(raw json.RawMessage) json.RawMessage {
	if !bytes.ContainsAny(raw, " \t\r\n") {
		return raw
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}
