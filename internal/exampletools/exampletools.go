// Package exampletools is a small HTTP server of example tools. `make run` starts it next to
// toolrouterd with examples/registry.yaml, and tests use it as a real tool endpoint
// (CONTRACT §4): every tool is POST {endpoint} with the arguments object as its JSON body;
// a 2xx JSON reply is the tool's output, any other status is a failure whose text is the
// reply's "error" field.
//
// Endpoints:
//
//	POST /echo            the JSON body, byte for byte
//	POST /add             {"a": number, "b": number} -> {"sum": a+b}
//	POST /validate/pass   {"passed": true, "checks": 1}
//	POST /validate/fail   {"passed": false, "reason": "..."}
//	POST /validate        passes when "value" is a non-empty string
//	POST /fail            500 {"error": "RuntimeError: boom"}
//	POST /greet           {"name": string} -> "Hello, name!" (a JSON string)
//	POST /slow            sleeps "ms" milliseconds (or "seconds"; default 1000 ms, max 60000), then echoes the body
//	POST /progress        {"steps": n, "ms": m} (default 3 steps, 100 ms): a text/event-stream of n progress
//	                      events m ms apart, then a result event {"steps": n} (docs/registry.md "Reporting progress")
//	POST /context         the arguments and the toolrouter headers the tool received
//	POST /big             a JSON string of "bytes" characters (default 64 MiB), streamed
//	POST /refund          {"to": string, "amount": number} -> {"refunded": amount, "to": to} (moves no money)
//	POST /kb/search       {"query": string} -> {"articles": [...]}, the example articles whose title contains it
//	POST /kb/delete       {"id": string} -> {"deleted": id} (deletes nothing)
//	GET  /healthz         "ok"
//
// Request bodies are limited to MaxBodyBytes; larger ones get 413. Every endpoint except
// /echo treats an empty body as {} and requires a JSON object otherwise; unknown argument
// keys are ignored (toolrouterd may add sandbox_root and resource_bindings).
package exampletools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxBodyBytes is the largest request body accepted; larger bodies get 413.
const MaxBodyBytes = 4 << 20

const (
	// DefaultSlowMS is /slow's sleep when the body has no "ms".
	DefaultSlowMS = 1000
	// MaxSlowMS is the longest sleep /slow accepts.
	MaxSlowMS = 60000
	// DefaultProgressSteps and DefaultProgressMS are /progress's steps and
	// their spacing when the body does not give them; MaxProgressSteps
	// bounds the steps (their spacing is bounded by MaxSlowMS).
	DefaultProgressSteps = 3
	DefaultProgressMS    = 100
	MaxProgressSteps     = 1000
	// DefaultBigBytes is the length of /big's string when the body has no "bytes".
	DefaultBigBytes = 64 << 20
	// MaxBigBytes is the longest string /big produces.
	MaxBigBytes = 1 << 30

	bigChunkSize = 32 << 10
)

// Headers toolrouterd sends with every tool call (CONTRACT §4).
const (
	HeaderPlanID         = "X-Toolrouter-Plan-Id"
	HeaderToolCallID     = "X-Toolrouter-Tool-Call-Id"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Handler returns the example tool server's routes.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", handleEcho)
	mux.HandleFunc("POST /add", handleAdd)
	mux.HandleFunc("POST /validate/pass", handleValidatePass)
	mux.HandleFunc("POST /validate/fail", handleValidateFail)
	mux.HandleFunc("POST /validate", handleValidate)
	mux.HandleFunc("POST /fail", handleFail)
	mux.HandleFunc("POST /slow", handleSlow)
	mux.HandleFunc("POST /progress", handleProgress)
	mux.HandleFunc("POST /greet", handleGreet)
	mux.HandleFunc("POST /context", handleContext)
	mux.HandleFunc("POST /big", handleBig)
	mux.HandleFunc("POST /refund", handleRefund)
	mux.HandleFunc("POST /kb/search", handleKBSearch)
	mux.HandleFunc("POST /kb/delete", handleKBDelete)
	mux.HandleFunc("GET /healthz", handleHealthz)
	return mux
}

// httpError is an error with the status it should be answered with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// writeJSON answers with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"encoding the reply failed"}`)
	}
	writeRaw(w, status, b)
}

// writeRaw answers with b, which must be JSON.
func writeRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers with {"error": err}, using err's status when it has one.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	if he, ok := errors.AsType[*httpError](err); ok {
		status = he.status
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// readBody reads the request body up to MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &httpError{
				status: http.StatusRequestEntityTooLarge,
				msg:    fmt.Sprintf("request body too large: the limit is %d bytes", MaxBodyBytes),
			}
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return b, nil
}

// readJSON reads a JSON body of any type; it must be valid JSON.
func readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, badRequest("invalid JSON body: the body is empty")
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		return nil, badRequest("invalid JSON body: %v", err)
	}
	return b, nil
}

// readArgs reads an arguments body: an empty body is {}, anything else must be a JSON object.
// It returns the raw body (`{}` for an empty one) and its members.
func readArgs(w http.ResponseWriter, r *http.Request) (json.RawMessage, map[string]json.RawMessage, error) {
	b, err := readBody(w, r)
	if err != nil {
		return nil, nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage(`{}`), map[string]json.RawMessage{}, nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		return nil, nil, badRequest("invalid JSON body: %v", err)
	}
	if bytes.TrimSpace(b)[0] != '{' {
		return nil, nil, badRequest("schema: the arguments must be a JSON object")
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(b, &args); err != nil {
		return nil, nil, badRequest("invalid JSON body: %v", err)
	}
	return b, args, nil
}

// isJSONNumber reports whether raw is a JSON number token.
func isJSONNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// numberArg returns args[name] as a float64. present is false when the key is absent or null.
func numberArg(args map[string]json.RawMessage, name string) (v float64, present bool, err error) {
	raw, ok := args[name]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return 0, false, nil
	}
	if !isJSONNumber(raw) {
		return 0, true, badRequest("schema: '%s' must be a number", name)
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, true, badRequest("schema: '%s' is out of range for a number", name)
	}
	return f, true, nil
}

func requiredNumber(args map[string]json.RawMessage, name string) (float64, error) {
	v, present, err := numberArg(args, name)
	if err != nil {
		return 0, err
	}
	if !present {
		return 0, badRequest("schema: '%s' must be a number", name)
	}
	return v, nil
}

func handleEcho(w http.ResponseWriter, r *http.Request) {
	b, err := readJSON(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeRaw(w, http.StatusOK, b)
}

func handleAdd(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	a, err := requiredNumber(args, "a")
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := requiredNumber(args, "b")
	if err != nil {
		writeError(w, err)
		return
	}
	sum := a + b
	if math.IsInf(sum, 0) {
		writeError(w, badRequest("schema: the sum of 'a' and 'b' is out of range for a number"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]float64{"sum": sum})
}

// stringArg is the named argument, which must be a non-empty string.
func stringArg(args map[string]json.RawMessage, name string) (string, error) {
	var v string
	if raw, ok := args[name]; !ok || json.Unmarshal(raw, &v) != nil || v == "" {
		return "", badRequest("schema: '%s' must be a non-empty string", name)
	}
	return v, nil
}

// handleRefund stands in for a payment API (the approvals example): it
// checks the arguments and answers what a refund would, moving nothing.
func handleRefund(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	to, err := stringArg(args, "to")
	if err != nil {
		writeError(w, err)
		return
	}
	amount, err := requiredNumber(args, "amount")
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"refunded": amount, "to": to})
}

type article struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

func handleKBSearch(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	q, err := stringArg(args, "query")
	if err != nil {
		writeError(w, err)
		return
	}
	found := []article{}
	for _, a := range [...]article{
		{"kb-1", "Refunds for damaged orders"},
		{"kb-2", "Changing a delivery address"},
		{"kb-3", "Resetting a password"},
	} {
		if strings.Contains(strings.ToLower(a.Title), strings.ToLower(q)) {
			found = append(found, a)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"articles": found})
}

func handleKBDelete(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := stringArg(args, "id")
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": id})
}

type validationResult struct {
	Passed bool   `json:"passed"`
	Checks int    `json:"checks,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func handleValidatePass(w http.ResponseWriter, r *http.Request) {
	if _, _, err := readArgs(w, r); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, validationResult{Passed: true, Checks: 1})
}

func handleValidateFail(w http.ResponseWriter, r *http.Request) {
	if _, _, err := readArgs(w, r); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, validationResult{Passed: false, Reason: "value did not satisfy the check"})
}

func handleValidate(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	res := validationResult{Passed: true, Checks: 1}
	raw, ok := args["value"]
	var s string
	switch {
	case !ok || string(bytes.TrimSpace(raw)) == "null":
		res = validationResult{Passed: false, Reason: "'value' is missing"}
	case json.Unmarshal(raw, &s) != nil:
		res = validationResult{Passed: false, Reason: "'value' must be a string"}
	case s == "":
		res = validationResult{Passed: false, Reason: "'value' must be a non-empty string"}
	}
	writeJSON(w, http.StatusOK, res)
}

func handleFail(w http.ResponseWriter, r *http.Request) {
	if _, err := readBody(w, r); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "RuntimeError: boom"})
}

func handleGreet(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	name, err := stringArg(args, "name")
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, "Hello, "+name+"!")
}

func handleSlow(w http.ResponseWriter, r *http.Request) {
	body, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	ms, present, err := numberArg(args, "ms")
	if err != nil {
		writeError(w, err)
		return
	}
	if !present {
		// seconds, the conformance suite's slow_compute's argument.
		var s float64
		if s, present, err = numberArg(args, "seconds"); err != nil {
			writeError(w, err)
			return
		}
		ms = s * 1000
	}
	if !present {
		ms = DefaultSlowMS
	}
	if ms < 0 || ms > MaxSlowMS {
		writeError(w, badRequest("schema: 'ms' must be between 0 and %d", MaxSlowMS))
		return
	}
	t := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		// The caller gave up (or the server is closing): nobody is left to answer.
		return
	}
	writeRaw(w, http.StatusOK, body)
}

// handleProgress streams "steps" progress events "ms" apart, then the
// result: the tool endpoint protocol's text/event-stream reply.
func handleProgress(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	steps, present, err := numberArg(args, "steps")
	if err != nil {
		writeError(w, err)
		return
	}
	if !present {
		steps = DefaultProgressSteps
	}
	ms, present, err := numberArg(args, "ms")
	if err != nil {
		writeError(w, err)
		return
	}
	if !present {
		ms = DefaultProgressMS
	}
	if steps < 0 || steps > MaxProgressSteps || steps != math.Trunc(steps) {
		writeError(w, badRequest("schema: 'steps' must be an integer between 0 and %d", MaxProgressSteps))
		return
	}
	if ms < 0 || ms > MaxSlowMS {
		writeError(w, badRequest("schema: 'ms' must be between 0 and %d", MaxSlowMS))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	n := int(steps)
	for i := 1; i <= n; i++ {
		t := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return // the caller gave up
		}
		if _, err := fmt.Fprintf(w, "event: progress\ndata: {\"progress\":%d,\"total\":%d,\"message\":\"step %d of %d\"}\n\n", i, n, i, n); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	_, _ = fmt.Fprintf(w, "event: result\ndata: {\"steps\":%d}\n\n", n)
}

func handleContext(w http.ResponseWriter, r *http.Request) {
	body, _, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Arguments      json.RawMessage `json:"arguments"`
		PlanID         string          `json:"plan_id"`
		ToolCallID     string          `json:"tool_call_id"`
		IdempotencyKey string          `json:"idempotency_key"`
	}{
		Arguments:      body,
		PlanID:         r.Header.Get(HeaderPlanID),
		ToolCallID:     r.Header.Get(HeaderToolCallID),
		IdempotencyKey: r.Header.Get(HeaderIdempotencyKey),
	})
}

// bigChunk is the content /big repeats; it is never written to.
var bigChunk = bytes.Repeat([]byte{'x'}, bigChunkSize)

func handleBig(w http.ResponseWriter, r *http.Request) {
	_, args, err := readArgs(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	f, present, err := numberArg(args, "bytes")
	if err != nil {
		writeError(w, err)
		return
	}
	n := int64(DefaultBigBytes)
	if present {
		if f < 0 || f > MaxBigBytes || f != math.Trunc(f) {
			writeError(w, badRequest("schema: 'bytes' must be an integer between 0 and %d", MaxBigBytes))
			return
		}
		n = int64(f)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.FormatInt(n+2, 10)) // the string and its two quotes
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte{'"'}); err != nil {
		return
	}
	ctx := r.Context()
	for n > 0 {
		if ctx.Err() != nil {
			return
		}
		c := min(n, int64(len(bigChunk)))
		if _, err := w.Write(bigChunk[:c]); err != nil {
			return // the client went away
		}
		n -= c
	}
	_, _ = w.Write([]byte{'"'})
}

func handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok")
}
