// Package remote executes one tool call against a tool's HTTP endpoint
// (CONTRACT §4): POST the arguments object as JSON, read a bounded reply,
// classify failures into the contract's error categories and retry only
// tools that declare themselves idempotent.
//
// The package does no logging; callers log the Outcome.
package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Defaults applied by New to zero (or negative) Options fields.
const (
	DefaultMaxReplyBytes  int64 = 16 << 20
	DefaultCallTimeout          = 30 * time.Second
	userAgent                   = "toolrouterd"
	contentTypeJSON             = "application/json"
	backoffBase                 = 100 * time.Millisecond
	backoffCap                  = 2 * time.Second
	retryAfterCap               = 2 * time.Second
	dialTimeout                 = 5 * time.Second
	dialKeepAlive               = 30 * time.Second
	tlsHandshakeTimeout         = 5 * time.Second
	idleConnTimeout             = 90 * time.Second
	maxIdleConns                = 1024
	maxIdleConnsPerHost         = 256
	expectContinueTimeout       = 1 * time.Second
)

// Request headers set by Call. The contract headers cannot be overridden by
// Tool.Headers; Accept and User-Agent can.
const (
	headerPlanID         = "X-Toolrouter-Plan-Id"
	headerToolCallID     = "X-Toolrouter-Tool-Call-Id"
	headerIdempotencyKey = "Idempotency-Key"
)

// Options configures a Client. The zero value is ready to use.
type Options struct {
	// MaxReplyBytes bounds the size of a tool's reply body; a larger reply
	// fails with category resource. Default 16 MiB.
	MaxReplyBytes int64
	// Transport carries the requests; nil means the package's tuned
	// transport, built once per Client. Tests and benchmarks may stub it.
	Transport http.RoundTripper
	// DefaultTimeout is the per-call deadline of tools whose Timeout is 0.
	// Default 30s.
	DefaultTimeout time.Duration
}

// Client executes tool calls. It holds one transport whose keep-alive
// connections are shared by every call; it is safe for concurrent use.
// Create it with New.
//
// Requests go to the transport's RoundTrip directly, not through an
// http.Client: a tool answers itself, so a redirect is a failure reported
// with its status line and never followed (a 301/302 would turn the POST
// into a GET, and following could leak Tool.Headers to another host), and
// the per-call deadline lives in the request's context. What http.Client
// would still do for such a request (basic auth from the endpoint's
// userinfo, its errors for a malformed Location and for odd RoundTripper
// answers) is done by roundTrip.
type Client struct {
	rt             http.RoundTripper
	targets        targetCache
	maxReplyBytes  int64
	defaultTimeout time.Duration
}

// New returns a Client configured by opts.
func New(opts Options) *Client {
	if opts.MaxReplyBytes <= 0 {
		opts.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultCallTimeout
	}
	rt := opts.Transport
	if rt == nil {
		rt = newTransport()
	}
	return &Client{
		rt:             rt,
		maxReplyBytes:  opts.MaxReplyBytes,
		defaultTimeout: opts.DefaultTimeout,
	}
}

// newTransport is the tuned transport: bounded dial and TLS handshake,
// TCP keep-alive, and a large idle pool so that many concurrent calls to the
// same tool reuse their connections.
func newTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxIdleConns,
		MaxIdleConnsPerHost:   maxIdleConnsPerHost,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ExpectContinueTimeout: expectContinueTimeout,
	}
}

// CloseIdle closes the idle keep-alive connections of the client's
// transport (for example after a registry reload, or at shutdown).
func (c *Client) CloseIdle() {
	if ci, ok := c.rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// Request is one call to execute.
type Request struct {
	Tool *toolrouter.Tool
	// Args is the arguments object; nil is sent as {}.
	Args map[string]any
	// PlanID and ToolCallID are sent as headers; an empty value omits its
	// header(s).
	PlanID     string
	ToolCallID string
	// Progress, when set, receives progress a backend reports while the
	// call runs (MCP notifications/progress); HTTP tools report none.
	Progress func(progress, total float64, message string)
}

// Outcome is the result of a call.
type Outcome struct {
	// Output is the 2xx JSON reply exactly as received (JSON null for an
	// empty reply); nil on failure.
	Output json.RawMessage
	// Err is the failure's message, safe to show to clients; "" on success.
	Err string
	// Category classifies the failure; "" on success.
	Category toolrouter.ErrorCategory
	// Status is the HTTP status of the last attempt, 0 if it got none.
	Status int
	// Attempts is the number of requests sent (0 when none could be built).
	Attempts int
	// Answered reports that the tool gave an answer of its own: a 2xx JSON
	// reply, or an error it reported as JSON ({"error": …} or
	// {"message": …}). It is false when the tool gave no usable answer: no
	// connection, a timeout, a crash page, a non-JSON or oversized reply.
	Answered bool
	// MCPResult is an MCP backend's CallToolResult as it sent it (see
	// toolrouter.Result.MCPResult); nil for HTTP tools.
	MCPResult json.RawMessage
}

// Success reports whether the call succeeded.
func (o Outcome) Success() bool { return o.Err == "" && o.Category == "" }

func failure(cat toolrouter.ErrorCategory, format string, args ...any) Outcome {
	return Outcome{Err: fmt.Sprintf(format, args...), Category: cat}
}

// emptyObject is the body of a call without arguments; it is only read.
var emptyObject = []byte("{}")

// errToolTimeout is the cause of the per-call deadline, telling it apart
// from a deadline or cancellation of the caller's context.
var errToolTimeout = errors.New("tool timeout")

// Call executes req. The tool's Timeout (or the client's DefaultTimeout)
// bounds the whole call, retries and backoff included. Only a tool that is
// Idempotent with Retries > 0 is retried, on transport errors and on 502, 503
// and 504, with jittered exponential backoff (or the reply's Retry-After),
// never past the deadline.
func (c *Client) Call(ctx context.Context, req Request) Outcome {
	t := req.Tool
	if t == nil {
		return failure(toolrouter.CategoryExecution, "no tool to call")
	}
	body := emptyObject
	if req.Args != nil {
		b, err := encodeArgs(req.Args)
		if err != nil {
			return failure(toolrouter.CategorySchema, "arguments cannot be encoded as JSON: %v", err)
		}
		body = b
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = c.defaultTimeout
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	defer cancel()

	maxAttempts := 1
	if t.Idempotent && t.Retries > 0 {
		maxAttempts += t.Retries
	}
	for attempt := 1; ; attempt++ {
		out, retry, wait := c.attempt(ctx, callCtx, timeout, req, body)
		out.Attempts = attempt
		if !retry || attempt >= maxAttempts {
			return out
		}
		if wait < 0 {
			wait = backoff(attempt)
		}
		if dl, ok := callCtx.Deadline(); ok && time.Until(dl) <= wait {
			// The next attempt could not start before the deadline: report
			// the failure we have rather than a timeout.
			return out
		}
		timer := time.NewTimer(wait)
		select {
		case <-callCtx.Done():
			timer.Stop()
			co := contextOutcome(ctx, callCtx, timeout)
			co.Status, co.Attempts = out.Status, attempt
			return co
		case <-timer.C:
		}
	}
}

// attempt sends one request. retry reports whether the failure is worth
// another attempt; wait is the reply's Retry-After, or -1 when it gave none.
func (c *Client) attempt(ctx, callCtx context.Context, timeout time.Duration, req Request, body []byte) (out Outcome, retry bool, wait time.Duration) {
	wait = -1
	tgt, err := c.targets.get(req.Tool.Endpoint)
	if err != nil {
		return failure(toolrouter.CategoryExecution, "invalid tool endpoint: %v", innerURLError(err)), false, wait
	}
	hreq := tgt.request(callCtx, body)
	setHeaders(hreq, req, tgt.basicAuth)

	resp, err := c.roundTrip(hreq)
	if err != nil {
		out, retry = transportFailure(ctx, callCtx, timeout, err)
		return out, retry, wait
	}
	defer closeBody(resp.Body)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		out = statusFailure(resp)
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			retry = true
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return out, retry, wait
	}

	data, tooLarge, err := readReply(resp.Body, resp.ContentLength, c.maxReplyBytes)
	switch {
	case err != nil:
		out, retry = transportFailure(ctx, callCtx, timeout, err)
	case tooLarge:
		out = failure(toolrouter.CategoryResource, "tool reply exceeds %d bytes", c.maxReplyBytes)
	case len(bytes.TrimSpace(data)) == 0:
		out.Output = json.RawMessage("null")
	case !json.Valid(data):
		out = failure(toolrouter.CategoryParse, "tool returned a non-JSON reply: %s", truncate(string(data), nonJSONPrefix))
	default:
		out.Output = data
	}
	out.Answered = out.Err == ""
	out.Status = resp.StatusCode
	return out, retry, wait
}

// setHeaders sets the request headers: the tool's own, then Accept and
// User-Agent unless the tool set them, then the contract headers, then
// basicAuth (the endpoint's userinfo) as Authorization unless the tool set
// a non-empty one. Every value slice of the map shares one backing array,
// each with capacity 1, so that the map costs three allocations in all.
func setHeaders(hreq *http.Request, req Request, basicAuth string) {
	n := len(req.Tool.Headers) + 7
	h := make(http.Header, n)
	vals := make([]string, 0, n)
	set := func(k, v string) {
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	for k, v := range req.Tool.Headers {
		switch ck := http.CanonicalHeaderKey(k); ck {
		case "Host":
			hreq.Host = v
		case "Content-Type", "Content-Length", headerPlanID, headerToolCallID, headerIdempotencyKey:
			// owned by the protocol
		default:
			set(ck, v)
		}
	}
	if _, ok := h["Accept"]; !ok {
		set("Accept", contentTypeJSON)
	}
	if _, ok := h["User-Agent"]; !ok {
		set("User-Agent", userAgent)
	}
	set("Content-Type", contentTypeJSON)
	if req.PlanID != "" {
		set(headerPlanID, req.PlanID)
	}
	if req.ToolCallID != "" {
		set(headerToolCallID, req.ToolCallID)
		set(headerIdempotencyKey, req.ToolCallID)
	}
	if basicAuth != "" && h.Get("Authorization") == "" {
		set("Authorization", basicAuth)
	}
	hreq.Header = h
}

// roundTrip sends hreq through the transport and does what http.Client
// would do for it, redirects aside (none is ever followed).
func (c *Client) roundTrip(hreq *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(hreq)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", c.rt)
	}
	if resp.Body == nil {
		if resp.ContentLength > 0 {
			return nil, fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", c.rt, resp.ContentLength)
		}
		resp.Body = http.NoBody
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		// http.Client parses the Location of a redirect before it asks
		// whether to follow it, and fails the request when it cannot.
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := hreq.URL.Parse(loc); err != nil {
				_ = resp.Body.Close()
				return nil, fmt.Errorf("failed to parse Location header %q: %v", loc, err)
			}
		}
	}
	return resp, nil
}

// contextOutcome is the failure of a call whose context is done: the tool's
// own deadline, the caller's deadline, or the caller's cancellation.
func contextOutcome(ctx, callCtx context.Context, timeout time.Duration) Outcome {
	if errors.Is(context.Cause(callCtx), errToolTimeout) {
		return failure(toolrouter.CategoryTimeout, "tool timed out after %s", timeout)
	}
	err := ctx.Err()
	if err == nil {
		err = callCtx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return failure(toolrouter.CategoryTimeout, "call cancelled: %v", err)
	}
	return failure(toolrouter.CategoryExecution, "call cancelled: %v", err)
}

// transportFailure classifies an error of the transport (no reply, or a
// reply body cut short). Only failures not caused by the context are worth
// a retry.
func transportFailure(ctx, callCtx context.Context, timeout time.Duration, err error) (Outcome, bool) {
	if callCtx.Err() != nil {
		return contextOutcome(ctx, callCtx, timeout), false
	}
	err = innerURLError(err)
	if Unreachable(err) {
		return failure(toolrouter.CategoryResource, "tool endpoint unreachable: %v", err), true
	}
	return failure(toolrouter.CategoryExecution, "tool request failed: %v", err), true
}

// Unreachable reports whether err means no connection to an endpoint could be
// made: refused, unknown host, dial timeout, no route.
func Unreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH)
}

// innerURLError strips the *url.Error wrapper, whose text repeats the
// endpoint (which may carry a token in its query).
func innerURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// backoff is the wait before attempt+1: 100ms doubling per attempt,
// jittered to [d/2, 3d/2), capped at 2s.
func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt-1, 10)
	d = min(d, backoffCap)
	d = d/2 + rand.N(d)
	return min(d, backoffCap)
}

// retryAfter parses a Retry-After value (delay seconds or an HTTP date),
// capped at 2s; -1 when absent or unparseable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return -1
		}
		if secs >= int64(retryAfterCap/time.Second) {
			return retryAfterCap
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), retryAfterCap)
	}
	return -1
}
