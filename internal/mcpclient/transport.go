package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const (
	userAgent       = "toolrouterd"
	sessionIDHeader = "Mcp-Session-Id"
	// peekBytes bounds how much of a 400 reply is read to tell a lost
	// session from other bad requests.
	peekBytes = 4 << 10
)

// serverTransport is the http.RoundTripper of one MCP server: it sends the
// server's configured headers (secrets included; they are never logged) on
// every request, and notices when the server no longer knows the session a
// request carries.
type serverTransport struct {
	base    http.RoundTripper
	headers map[string]string
	// lost is told the session id of a request the server answered with
	// 404 (the streamable HTTP transport's "session expired"), or with 400
	// and a body that complains about the session (what some servers,
	// among them the TypeScript reference servers, answer instead).
	lost func(sessionID string)
	// event, when set, sees the data of every server-sent event as the
	// SDK reads it, before the SDK sees the events that follow.
	event func(data []byte)
}

func (t *serverTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.roundTrip(r, true)
}

// untapped is t without the progress tap: the transport of the hot path
// (fastcall.go), whose own parser hands a call's notifications on as it
// reads them (server.notify), so that its stream is not parsed twice.
type untapped struct{ t *serverTransport }

func (u untapped) RoundTrip(r *http.Request) (*http.Response, error) {
	return u.t.roundTrip(r, false)
}

// roundTrip is RoundTrip, with the progress tap on an event stream when
// tap.
func (t *serverTransport) roundTrip(r *http.Request, tap bool) (*http.Response, error) {
	r2 := r
	cred := credentialFrom(r.Context())
	if !t.hasHeaders(r.Header) || (cred != nil && r.Header.Get(cred.Header) != cred.Value.Reveal()) {
		// A RoundTripper must not change its request: a copy. (The hot
		// path's requests come with the headers already, see
		// server.post.)
		r2 = r.Clone(r.Context())
		t.setHeaders(r2.Header)
		setCredential(r.Context(), r2.Header)
	}
	resp, err := t.base.RoundTrip(r2)
	if err != nil || r.Method == http.MethodDelete {
		return resp, err
	}
	budgeted(r, resp)
	if resp.StatusCode == http.StatusOK && resp.Body != nil && budgetFrom(r.Context()) == nil && !isEventStream(resp.Header.Get("Content-Type")) {
		// The SDK reads a JSON answer whole (a resources/read, a
		// prompts/get): held to one message's bound, as an event is.
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxFastMessage}
	}
	if c := taskCaptureFrom(r.Context()); c != nil && r.Method == http.MethodPost && resp.StatusCode == http.StatusOK {
		c.capture(r, resp) // a call that may become a task (tasks.go)
	}
	if tap && resp.StatusCode == http.StatusOK && isEventStream(resp.Header.Get("Content-Type")) {
		event := t.event
		if relay := callRelay(r.Context()); relay != nil && relay.Log != nil {
			// The stream of one call's request: its log messages belong
			// to the caller that made the call.
			event = func(data []byte) {
				if t.event != nil {
					t.event(data)
				}
				relayLog(relay, data)
			}
		}
		if event != nil {
			resp.Body = &sseTap{body: resp.Body, event: event}
		}
	}
	if t.lost == nil {
		return resp, nil
	}
	sid := r.Header.Get(sessionIDHeader)
	if sid == "" {
		return resp, nil
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		t.lost(sid)
	case http.StatusBadRequest:
		if mentionsSession(resp) {
			t.lost(sid)
		}
	}
	return resp, nil
}

// setHeaders puts the server's headers, and a User-Agent when h has
// none, in h.
func (t *serverTransport) setHeaders(h http.Header) {
	for k, v := range t.headers {
		h.Set(k, v)
	}
	if h.Get("User-Agent") == "" {
		h.Set("User-Agent", userAgent)
	}
}

// hasHeaders reports whether h already has what setHeaders would put in.
func (t *serverTransport) hasHeaders(h http.Header) bool {
	for k, v := range t.headers {
		if vs := h.Values(k); len(vs) != 1 || vs[0] != v {
			return false
		}
	}
	return h.Get("User-Agent") != ""
}

// relayLog passes the data of an event that is a notifications/message on
// to relay.
func relayLog(relay *toolrouter.Relay, data []byte) {
	if !bytes.Contains(data, []byte(`"notifications/message"`)) {
		return
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			Level  string          `json:"level"`
			Logger string          `json:"logger"`
			Data   json.RawMessage `json:"data"`
		} `json:"params"`
	}
	if json.Unmarshal(data, &n) != nil || n.Method != "notifications/message" || n.Params.Level == "" {
		return
	}
	relay.Log(n.Params.Level, n.Params.Logger, n.Params.Data)
}

func isEventStream(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// maxEventData bounds the data of one event the tap buffers; the events it
// looks for (progress notifications) are small, larger ones are skipped
// (the SDK still reads them in full).
const maxEventData = 64 << 10

// sseTap passes a Server-Sent Events body through unchanged, handing the
// data of each complete event to event before Read returns the bytes that
// end it: whatever event does happens before the reader sees any later
// event. (The SDK handles notifications on another goroutine than
// responses, so a progress notification it handled itself could arrive
// after the result of its call.)
type sseTap struct {
	body     io.ReadCloser
	event    func(data []byte)
	line     []byte
	data     []byte
	overflow bool
}

func (t *sseTap) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	t.feed(p[:n])
	return n, err
}

func (t *sseTap) Close() error { return t.body.Close() }

// Ended passes on the body's ended (see fastcall.go).
func (t *sseTap) Ended() bool { return ended(t.body) }

func (t *sseTap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.appendLine(b)
			return
		}
		t.appendLine(b[:i])
		t.endLine()
		b = b[i+1:]
	}
}

func (t *sseTap) appendLine(b []byte) {
	if len(t.line)+len(b) > maxEventData {
		t.overflow = true
		return
	}
	t.line = append(t.line, b...)
}

func (t *sseTap) endLine() {
	line := bytes.TrimSuffix(t.line, []byte("\r"))
	t.line = t.line[:0]
	switch {
	case len(line) == 0: // the end of an event
		if len(t.data) > 0 && !t.overflow {
			t.event(t.data)
		}
		t.data, t.overflow = t.data[:0], false
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(t.data)+len(v)+1 > maxEventData {
			t.overflow = true
			return
		}
		if len(t.data) > 0 {
			t.data = append(t.data, '\n')
		}
		t.data = append(t.data, v...)
	}
}

// mentionsSession peeks at the start of a reply body for the word
// "session", leaving the body readable in full.
func mentionsSession(resp *http.Response) bool {
	head, err := io.ReadAll(io.LimitReader(resp.Body, peekBytes))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	return strings.Contains(strings.ToLower(string(head)), "session")
}

type readCloser struct {
	io.Reader
	io.Closer
}

// redactURL is the server URL as it may appear in messages: without user
// information and query, which can carry credentials.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// callRelayKey carries a call's relay from send, through the SDK (whose
// only way to its transport is the request's context), to the transport
// that reads the call's event stream. It is mcpclient's own: the relay
// reaches mcpclient in the ExecRequest, never in a context.
type callRelayKey struct{}

func withCallRelay(ctx context.Context, relay *toolrouter.Relay) context.Context {
	return context.WithValue(ctx, callRelayKey{}, relay)
}

// callRelay is the relay of the call whose request ctx is; nil when none.
func callRelay(ctx context.Context) *toolrouter.Relay {
	r, _ := ctx.Value(callRelayKey{}).(*toolrouter.Relay)
	return r
}

// errAnswerTooLarge is the error of a JSON answer past maxFastMessage.
var errAnswerTooLarge = fmt.Errorf("the MCP server's answer is larger than %d bytes", maxFastMessage)

// boundedBody is a JSON answer that fails once more than left bytes were
// read from it.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n + int(b.left), errAnswerTooLarge
	}
	return n, err
}

// Ended passes on the body's ended (see fastcall.go).
func (b *boundedBody) Ended() bool { return ended(b.ReadCloser) }
