// Package remote is the router's executor for HTTP tools: it executes one
// toolrouter.ExecRequest against the tool's endpoint (docs/registry.md "Writing a
// tool"): POST the arguments object as JSON, read a bounded reply, classify
// failures into the error categories and retry only tools that declare
// themselves idempotent (backoff, Retry-After and transport from outbound).
//
// The package does no logging; callers log the Outcome.
package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Defaults applied by New to zero (or negative) Options fields.
const (
	DefaultMaxReplyBytes int64 = 16 << 20
	DefaultCallTimeout         = 30 * time.Second
	userAgent                  = "toolrouterd"
	contentTypeJSON            = "application/json"
	retryAfterCap              = 2 * time.Second
)

// backoff spaces the retries of idempotent tools: 100ms doubling per
// attempt, jittered to [d/2, 3d/2), at most 2s.
var backoff = outbound.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}

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
	// Transport carries the requests; nil means outbound.NewTransport,
	// built once per Client. Tests and benchmarks may stub it.
	Transport http.RoundTripper
	// DefaultTimeout is the per-call deadline of tools whose Timeout is 0.
	// Default 30s.
	DefaultTimeout time.Duration
	// Wrap, when set, wraps the transport (tracing: telemetry.Transport).
	Wrap func(http.RoundTripper) http.RoundTripper
}

// Client executes tool calls. It holds one transport whose keep-alive
// connections are shared by every call; it is safe for concurrent use.
// Create it with New.
//
// A tool answers itself, so a redirect is a failure reported with its
// status line and never followed (a 301/302 would turn the POST into a GET,
// and following could leak Tool.Headers to another host); the per-call
// deadline lives in the request's context.
type Client struct {
	rt             http.RoundTripper
	hc             *http.Client // over rt, never following a redirect (noRedirect)
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
		rt = outbound.NewTransport()
	}
	if opts.Wrap != nil {
		rt = opts.Wrap(rt)
	}
	return &Client{
		rt:             rt,
		hc:             &http.Client{Transport: rt, CheckRedirect: noRedirect},
		maxReplyBytes:  opts.MaxReplyBytes,
		defaultTimeout: opts.DefaultTimeout,
	}
}

// CloseIdle closes the idle keep-alive connections of the client's
// transport (for example after a registry reload, or at shutdown).
func (c *Client) CloseIdle() {
	if ci, ok := c.rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
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
func (c *Client) Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	t := req.Tool
	if t == nil {
		return toolrouter.Failure(toolrouter.CategoryExecution, "no tool to call")
	}
	body := emptyObject
	if req.ArgsJSON != nil {
		body = req.ArgsJSON
	} else if req.Args != nil {
		b, err := json.Marshal(req.Args)
		if err != nil {
			return toolrouter.Failure(toolrouter.CategorySchema, "arguments cannot be encoded as JSON: %v", err)
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
			wait = backoff.Delay(attempt)
		}
		switch err := outbound.Sleep(callCtx, wait); {
		case errors.Is(err, outbound.ErrPastDeadline):
			// The next attempt could not start before the deadline: report
			// the failure we have rather than a timeout.
			return out
		case err != nil:
			co := contextOutcome(ctx, callCtx, timeout)
			co.Status, co.Attempts = out.Status, attempt
			return co
		}
	}
}

// attempt sends one request. retry reports whether the failure is worth
// another attempt; wait is the reply's Retry-After, or -1 when it gave none.
func (c *Client) attempt(ctx, callCtx context.Context, timeout time.Duration, req toolrouter.ExecRequest, body []byte) (out toolrouter.Outcome, retry bool, wait time.Duration) {
	wait = -1
	rb := &requestBody{}
	rb.Reset(body)
	// A *bytes.Reader, as the transport wants it: known to be in memory,
	// it writes headers and body in one write.
	hreq, err := http.NewRequestWithContext(callCtx, http.MethodPost, req.Tool.Endpoint, &rb.Reader)
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryExecution, "invalid tool endpoint: %v", innerURLError(err)), false, wait
	}
	setHeaders(hreq, req, basicAuth(hreq.URL), rb.vals[:0])

	resp, err := c.hc.Do(hreq)
	if err != nil {
		out, retry = transportFailure(ctx, callCtx, timeout, err)
		return out, retry, wait
	}
	read := false // the whole body of a declared length was read: nothing to discard
	defer func() {
		if read {
			_ = resp.Body.Close()
		} else {
			closeBody(resp.Body)
		}
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		out = statusFailure(resp)
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			retry = true
			wait = outbound.RetryAfter(resp.Header, time.Now(), retryAfterCap)
		}
		return out, retry, wait
	}

	ct := resp.Header.Get("Content-Type")
	budget := req.Batch
	if eventStream(ct) {
		out, retry = c.streamReply(ctx, callCtx, timeout, req, resp.Body)
		// Never drained: a stream may stay open after its last event.
		read = true
		out.Status = resp.StatusCode
		return out, retry, wait
	}
	var taken int64 // reserved from budget before reading
	if budget != nil && resp.ContentLength >= 0 && resp.ContentLength <= c.maxReplyBytes {
		if !budget.Take(resp.ContentLength) {
			out = budget.Exceeded(resp.ContentLength)
			out.Status = resp.StatusCode
			return out, false, wait
		}
		taken = resp.ContentLength
	}
	var reserve func(int64) bool
	var seen int64 // bytes of a reply of unknown length read so far
	if budget != nil && taken == 0 {
		// Unknown length: reserve as the chunks arrive.
		reserve = func(n int64) bool {
			seen += n
			if !budget.Take(n) {
				return false
			}
			taken += n
			return true
		}
	}
	data, tooLarge, err := readReply(resp.Body, resp.ContentLength, c.maxReplyBytes, reserve)
	read = err == nil && !tooLarge && resp.ContentLength >= 0
	switch {
	case errors.Is(err, errNoBudget):
		out = budget.Exceeded(seen)
		out.Err = strings.Replace(out.Err, "this output of", "this output of at least", 1)
	case err != nil:
		out, retry = transportFailure(ctx, callCtx, timeout, err)
	case tooLarge:
		out = toolrouter.Failure(toolrouter.CategoryResource, "tool reply exceeds %d bytes", c.maxReplyBytes)
	default:
		out = decodeReply(data, ct, budget != nil)
	}
	if taken > 0 && !out.Budgeted {
		budget.Give(taken) // not kept
	}
	out.Answered = out.Err == ""
	out.Status = resp.StatusCode
	return out, retry, wait
}

// streamReply reads a text/event-stream reply (stream.go): its progress
// goes to req.Progress, its result event's data is decoded as a plain
// reply's body is (decodeReply), taken from req.Batch like one of known
// length.
func (c *Client) streamReply(ctx, callCtx context.Context, timeout time.Duration, req toolrouter.ExecRequest, body io.Reader) (out toolrouter.Outcome, retry bool) {
	end, err := readEventStream(body, c.maxReplyBytes, req.Progress)
	switch {
	case errors.Is(err, errStreamTooLarge):
		return toolrouter.Failure(toolrouter.CategoryResource, "tool reply exceeds %d bytes", c.maxReplyBytes), false
	case errors.Is(err, errNoResult) && callCtx.Err() == nil:
		return toolrouter.Failure(toolrouter.CategoryExecution, "tool's event stream ended without a result or error event"), false
	case err != nil:
		return transportFailure(ctx, callCtx, timeout, err)
	case end.isError:
		return streamFailure(end), false
	}
	data := end.result
	budget := req.Batch
	if budget != nil && !budget.Take(int64(len(data))) {
		return budget.Exceeded(int64(len(data))), false
	}
	out = decodeReply(data, contentTypeJSON, budget != nil)
	if budget != nil && !out.Budgeted {
		budget.Give(int64(len(data))) // not kept
	}
	out.Answered = out.Err == ""
	return out, false
}

// decodeReply is the outcome of a 2xx reply's body data, read in full,
// with Content-Type ct. budgeted reports that data was taken from the
// call's Budget (kept when the outcome is a success).
func decodeReply(data []byte, ct string, budgeted bool) (out toolrouter.Outcome) {
	switch {
	case !jsonContentType(ct):
		// The tool says it is not JSON: a text/plain "{}" is still text.
		out = toolrouter.Failure(toolrouter.CategoryParse, "tool returned a non-JSON reply (Content-Type %s): %s", truncate(ct, nonJSONPrefix), truncate(string(data), nonJSONPrefix))
	case len(bytes.TrimSpace(data)) == 0:
		out.Output = json.RawMessage("null")
		out.MarkChecked()
	case !segjson.Valid(data):
		out = toolrouter.Failure(toolrouter.CategoryParse, "tool returned a non-JSON reply: %s", truncate(string(data), nonJSONPrefix))
	default:
		// Still one JSON value with its invalid UTF-8 replaced (json.Valid
		// admits such bytes only inside strings): checked, once, and
		// marked so (issue 37 item 1). segmentio's Valid takes what
		// encoding/json's does (TestValidAsEncodingJSON) in about half the
		// instructions (bench/README.md decision table).
		out.Output, out.InvalidUTF8 = validUTF8(data)
		out.MarkChecked()
		out.Budgeted = budgeted
	}
	return out
}

// setHeaders sets the request headers: the tool's own, then Accept and
// User-Agent unless the tool set them, then the contract headers, then
// basicAuth (the endpoint's userinfo) as Authorization unless the tool set
// a non-empty one. They go into the empty map http.NewRequestWithContext
// made, and every value slice shares one backing array (vals, when it has
// room), each with capacity 1, so that the values cost at most one
// allocation in all.
func setHeaders(hreq *http.Request, req toolrouter.ExecRequest, basicAuth string, vals []string) {
	if n := len(req.Tool.Headers) + 8; cap(vals) < n {
		vals = make([]string, 0, n)
	}
	h := hreq.Header
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
	if c := req.Credential; c != nil {
		// The user's credential for this backend (docs/backend-auth.md)
		// replaces a registry header of the same name.
		set(http.CanonicalHeaderKey(c.Header), c.Value.Reveal())
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
}

// requestBody is the reader of a request's body and room for its header
// values (setHeaders): one allocation for both.
type requestBody struct {
	bytes.Reader
	vals [8]string
}

// basicAuth is the Authorization value of an endpoint's userinfo
// ("Basic …"), "" when it has none.
func basicAuth(u *url.URL) string {
	if u.User == nil {
		return ""
	}
	password, _ := u.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+password))
}

// noRedirect makes http.Client return a redirect as the reply.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// contextOutcome is the failure of a call whose context is done: the tool's
// own deadline, the caller's deadline, or the caller's cancellation.
func contextOutcome(ctx, callCtx context.Context, timeout time.Duration) toolrouter.Outcome {
	if errors.Is(context.Cause(callCtx), errToolTimeout) {
		return toolrouter.Failure(toolrouter.CategoryTimeout, "tool timed out after %s", timeout)
	}
	err := ctx.Err()
	if err == nil {
		err = callCtx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return toolrouter.Failure(toolrouter.CategoryTimeout, "call cancelled: %v", err)
	}
	return toolrouter.Failure(toolrouter.CategoryExecution, "call cancelled: %v", err)
}

// transportFailure classifies an error of the transport (no reply, or a
// reply body cut short). Only failures not caused by the context are worth
// a retry.
func transportFailure(ctx, callCtx context.Context, timeout time.Duration, err error) (toolrouter.Outcome, bool) {
	if callCtx.Err() != nil {
		return contextOutcome(ctx, callCtx, timeout), false
	}
	err = innerURLError(err)
	if outbound.Unreachable(err) {
		return toolrouter.Failure(toolrouter.CategoryResource, "tool endpoint unreachable: %v", err), true
	}
	return toolrouter.Failure(toolrouter.CategoryExecution, "tool request failed: %v", err), true
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
