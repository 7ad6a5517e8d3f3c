package mcpclient

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestTaskCaptureReadsTheCreateTaskResult: the task of a tools/call's
// answer, JSON or an event stream (after progress), is read from the bytes
// the SDK consumed; an answer without one, or one too large to be one,
// gives none.
func TestTaskCaptureReadsTheCreateTaskResult(t *testing.T) {
	const created = `{"jsonrpc":"2.0","id":3,"result":{"resultType":"task","taskId":"bk-1","status":"working","createdAt":"2026-12-07T10:00:00Z","lastUpdatedAt":"2026-12-07T10:00:01Z","ttlMs":60000,"pollIntervalMs":500}}`
	for _, tc := range []struct {
		name, contentType, body string
		want                    string // the task id; "" for none
	}{
		{"json", "application/json", created, "bk-1"},
		{"stream", "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"x\",\"progress\":1}}\n\nevent: message\ndata: " + created + "\n\n", "bk-1"},
		{"a result", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a task"}]}}`, ""},
		{"not a task", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","taskId":"bk-1","status":"working"}}`, ""},
		{"too large", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"task","taskId":"bk-1","status":"working","pad":"` + strings.Repeat("x", maxCapture) + `"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://backend/mcp", nil)
			req.Header.Set(sessionIDHeader, "sess-9")
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {tc.contentType}}, Body: io.NopCloser(strings.NewReader(tc.body))}
			c := &taskCapture{}
			c.capture(req, resp)
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatal(err)
			}
			got := c.task()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("task = %+v, want none", got)
			case tc.want == "":
			case got == nil:
				t.Fatal("no task read")
			case got.ID != tc.want || got.Session != "sess-9" || got.Status != toolrouter.TaskWorking || got.PollIntervalMillis != 500 ||
				got.TTLMillis == nil || *got.TTLMillis != 60000 || got.CreatedAt != "2026-12-07T10:00:00Z":
				t.Fatalf("task = %+v", got)
			}
		})
	}
}

// TestReadAnswerFindsItsResponse: the response numbered as the request,
// from JSON or from a stream that carries other messages first; a JSON-RPC
// error in a non-2xx answer is the answer.
func TestReadAnswerFindsItsResponse(t *testing.T) {
	stream := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"resultType\":\"complete\"}}\n\n"
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(stream))}
	m, err := readAnswer(resp, []byte("7"))
	if err != nil || string(m.Result) != `{"resultType":"complete"}` {
		t.Fatalf("readAnswer = %+v, %v", m, err)
	}
	resp = &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Mcp-Name header does not match"}}`))}
	if m, err = readAnswer(resp, []byte("7")); err != nil || m.Error == nil || m.Error.Code != -32020 {
		t.Fatalf("readAnswer of a 400 = %+v, %v", m, err)
	}
	resp = &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":8,"result":{}}`))}
	if _, err = readAnswer(resp, []byte("7")); err == nil {
		t.Fatal("readAnswer took another request's response")
	}
}

// TestRPCErrorOutcomeCarriesTheError: a tasks/* request answered with a
// JSON-RPC error carries that error as the outcome's MCPResult too (a
// TaskState), where the pipeline's redaction reads it: the backend's
// message and data reach the client only as redaction left them.
func TestRPCErrorOutcomeCarriesTheError(t *testing.T) {
	raw := json.RawMessage(`{"code":-32603,"message":"token AKIAZ4RT7YUIOPL2QW3E","data":{"k":"v"}}`)
	out := rpcErrorOutcome("bk-1", raw)
	var st toolrouter.TaskState
	if out.Task == nil || string(out.Task.RPCError) != string(raw) || json.Unmarshal(out.MCPResult, &st) != nil || string(st.Error) != string(raw) {
		t.Fatalf("outcome = %+v (MCPResult %s)", out, out.MCPResult)
	}
}

// TestCreatedTaskOutcomeCarriesTheState: the outcome of a call the backend
// answered with a task carries the task's statusMessage as MCPResult (a
// TaskState), where the pipeline's redaction reads it.
func TestCreatedTaskOutcomeCarriesTheState(t *testing.T) {
	out := createdTaskOutcome(&toolrouter.BackendTask{ID: "bk-1", Status: toolrouter.TaskWorking, StatusMessage: "token AKIAZ4RT7YUIOPL2QW3E"})
	var st toolrouter.TaskState
	if out.Task == nil || out.Task.ID != "bk-1" || !out.Answered || json.Unmarshal(out.MCPResult, &st) != nil || st.StatusMessage != "token AKIAZ4RT7YUIOPL2QW3E" {
		t.Fatalf("outcome = %+v (MCPResult %s)", out, out.MCPResult)
	}
}

// review10RoundTrip answers every request with resp.
type review10RoundTrip struct{ resp func() *http.Response }

func (f review10RoundTrip) RoundTrip(*http.Request) (*http.Response, error) { return f.resp(), nil }

// TestTransportBoundsJSONAnswers: a JSON answer outside a discovery (a
// resources/read, a prompts/get) is read up to one message's bound
// (maxFastMessage, the SDK's bound of one event) and fails past it, so a
// hostile server cannot make the SDK hold an answer of any size; a
// smaller answer reads whole.
func TestTransportBoundsJSONAnswers(t *testing.T) {
	for _, tc := range []struct {
		size int
		ok   bool
	}{{1 << 10, true}, {maxFastMessage, true}, {maxFastMessage + 1, false}, {4 * maxFastMessage, false}} {
		tr := &serverTransport{base: review10RoundTrip{func() *http.Response {
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(io.LimitReader(zeroReader{}, int64(tc.size)))}
		}}}
		req, _ := http.NewRequest(http.MethodPost, "http://backend/mcp", strings.NewReader(`{}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		if (err == nil) != tc.ok || n > maxFastMessage {
			t.Errorf("an answer of %d bytes: read %d, %v", tc.size, n, err)
		}
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
