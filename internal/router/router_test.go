package router_test

import (
	"context"
	"encoding/json"
	"github.com/toolrouterd/toolrouterd/internal/pipeline/pipelinetest"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// stubExec answers every call with out (and records the request).
type stubExec struct {
	out toolrouter.Outcome
	req toolrouter.ExecRequest
}

func (s *stubExec) Call(_ context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	s.req = req
	if req.Progress != nil {
		req.Progress(1, 2, "half")
		req.Progress(3, 0, "")
	}
	return s.out
}

type observed struct{ tool, outcome string }

type observer struct{ calls []observed }

func (o *observer) ToolCall(_ context.Context, _, tool, outcome string, d time.Duration) {
	if d <= 0 {
		panic("no duration")
	}
	o.calls = append(o.calls, observed{tool, outcome})
}

func newTestRouter(t *testing.T, exec router.Executor, obs router.Observer) *rig {
	t.Helper()
	reg, err := registry.Parse("test.yaml", []byte(pipelinetest.Registry), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, 0)
	return &rig{
		Tools:    func() pipeline.Tools { return reg },
		Exec:     exec,
		Seq:      memory.New(),
		Observer: obs,
		Now: func() time.Time {
			t0 = t0.Add(1500 * time.Microsecond)
			return t0
		},
	}
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// resultJSON is the result as the API answers it, duration aside.
func resultJSON(t *testing.T, res *toolrouter.Result) string {
	t.Helper()
	if res.DurationMS <= 0 {
		t.Errorf("duration %v", res.DurationMS)
	}
	r := *res
	r.DurationMS = 0
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRouteResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, payload string
		meta          map[string]any
		out           toolrouter.Outcome
		want          string
		wantObs       observed
		wantUpdates   string
	}{
		{
			name:    "success",
			payload: `{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}`,
			meta:    map[string]any{"k": "v"},
			out:     toolrouter.Outcome{Output: json.RawMessage(`{"msg":"hi"}`), Status: 200, Attempts: 1, Answered: true},
			want:    `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":"call_1","plan_id":"p","sequence":0,"tool_name":"test/echo","provider_format":"openai","arguments":{"msg":"hi"},"success":true,"output":{"msg":"hi"},"error":null,"error_category":null,"is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{"k":"v"},"provider_result":{"content":"{\"msg\":\"hi\"}","role":"tool","tool_call_id":"call_1"}}`,
			wantObs: observed{"test/echo", "success"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","message":"half","progress":1,"total":2},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","progress":3},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"complete","tool_name":"test/echo"}]`,
		},
		{
			name:    "tool failure without id",
			payload: `{"name":"test/echo","arguments":{"msg":"hi"}}`,
			out:     toolrouter.Outcome{Err: "tool timed out after 10s", Category: toolrouter.CategoryTimeout, Attempts: 1},
			want:    `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":null,"plan_id":"p","sequence":0,"tool_name":"test/echo","provider_format":"openai","arguments":{"msg":"hi"},"success":false,"output":null,"error":"tool timed out after 10s","error_category":"timeout","is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{},"provider_result":{"content":"tool timed out after 10s","role":"tool","tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6"}}`,
			wantObs: observed{"test/echo", "timeout"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","message":"half","progress":1,"total":2},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","progress":3},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"error","tool_name":"test/echo","message":"tool timed out after 10s"}]`,
		},
		{
			name:    "user must connect the backend (oauth)",
			payload: `{"name":"test/echo","arguments":{"msg":"hi"}}`,
			out:     toolrouter.Outcome{Err: "backend test/echo: not connected", Category: toolrouter.CategoryAuth, ConnectURL: "http://tr/connect/s1"},
			want:    `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":null,"plan_id":"p","sequence":0,"tool_name":"test/echo","provider_format":"openai","arguments":{"msg":"hi"},"success":false,"output":null,"error":"backend test/echo: not connected","error_category":"auth","is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{},"provider_result":{"content":"backend test/echo: not connected","role":"tool","tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6"},"status":"auth_required","connect_url":"http://tr/connect/s1"}`,
			wantObs: observed{"test/echo", "auth"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","message":"half","progress":1,"total":2},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","progress":3},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"error","tool_name":"test/echo","message":"backend test/echo: not connected"}]`,
		},
		{
			name:    "tool error without category",
			payload: `{"type":"tool_use","id":"toolu_1","name":"test/echo","input":{}}`,
			out:     toolrouter.Outcome{Err: "permission denied", Status: 500, Attempts: 1, Answered: true},
			want:    `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":"toolu_1","plan_id":"p","sequence":0,"tool_name":"test/echo","provider_format":"anthropic","arguments":{},"success":false,"output":null,"error":"permission denied","error_category":"permission","is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{},"provider_result":{"content":"permission denied","is_error":true,"tool_use_id":"toolu_1","type":"tool_result"}}`,
			wantObs: observed{"test/echo", "permission"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","message":"half","progress":1,"total":2},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/echo","progress":3},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"complete","tool_name":"test/echo","message":"permission denied"}]`,
		},
		{
			name:        "not found",
			payload:     `{"type":"tool_use","id":"toolu_1","name":"nope","input":{"a":1}}`,
			want:        `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":"toolu_1","plan_id":"p","sequence":0,"tool_name":"nope","provider_format":"anthropic","arguments":{"a":1},"success":false,"output":null,"error":"Tool 'nope' not found","error_category":"not_found","is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{},"provider_result":{"content":"Tool 'nope' not found","is_error":true,"tool_use_id":"toolu_1","type":"tool_result"}}`,
			wantObs:     observed{"(unknown)", "not_found"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"nope"},{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"error","tool_name":"nope","message":"Tool 'nope' not found"}]`,
		},
		{
			name:    "parse error",
			payload: `{"id":"call_9","function":{"name":"test/echo","arguments":"{oops"}}`,
			// The failure answers the provider's own id: the provider
			// wants every call of a turn answered.
			want:        `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":"call_9","plan_id":"p","sequence":0,"tool_name":"test/echo","provider_format":"openai","arguments":{},"success":false,"output":null,"error":"parse error: arguments are not valid JSON: invalid character 'o' looking for beginning of object key string","error_category":"parse","is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{},"provider_result":{"content":"parse error: arguments are not valid JSON: invalid character 'o' looking for beginning of object key string","role":"tool","tool_call_id":"call_9"}}`,
			wantObs:     observed{"(unknown)", "parse"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"test/echo"},{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"error","tool_name":"test/echo","message":"parse error: arguments are not valid JSON: invalid character 'o' looking for beginning of object key string"}]`,
		},
		{
			// Gemini's OpenAI-compatible endpoint sends "id": "": answered
			// as "", not under the tc_ id, so the client pairs them.
			name:        "empty provider id",
			payload:     `{"id":"","type":"function","function":{"name":"nope","arguments":""}}`,
			want:        `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":"","plan_id":"p","sequence":0,"tool_name":"nope","provider_format":"openai","arguments":{},"success":false,"output":null,"error":"Tool 'nope' not found","error_category":"not_found","is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{},"provider_result":{"content":"Tool 'nope' not found","role":"tool","tool_call_id":""}}`,
			wantObs:     observed{"(unknown)", "not_found"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"nope"},{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"error","tool_name":"nope","message":"Tool 'nope' not found"}]`,
		},
		{
			name:        "schema error",
			payload:     `{"name":"test/echo","args":{"msg":1},"type":"tool_call"}`,
			want:        `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":null,"plan_id":"p","sequence":0,"tool_name":"test/echo","provider_format":"langchain","arguments":{"msg":1},"success":false,"output":null,"error":"SCHEMA","error_category":"schema","is_validation":false,"validation_passed":null,"duration_ms":0,"provider_metadata":{},"provider_result":{"content":"SCHEMA","name":"test/echo","status":"error","tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","type":"tool"}}`,
			wantObs:     observed{"test/echo", "schema"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"test/echo"},{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"error","tool_name":"test/echo","message":"SCHEMA"}]`,
		},
		{
			name:    "validation tool",
			payload: `{"functionCall":{"name":"test/check","args":{}}}`,
			out:     toolrouter.Outcome{Output: json.RawMessage(`{"passed":true}`), Status: 200, Attempts: 1, Answered: true},
			want:    `{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","provider_call_id":null,"plan_id":"p","sequence":0,"tool_name":"test/check","provider_format":"gemini","arguments":{},"success":true,"output":{"passed":true},"error":null,"error_category":null,"is_validation":true,"validation_passed":true,"duration_ms":0,"provider_metadata":{},"provider_result":{"functionResponse":{"id":"tc_0426a3b5ebe27a4c5365d1e6","name":"test/check","response":{"output":{"passed":true}}}}}`,
			wantObs: observed{"test/check", "success"},
			wantUpdates: `[{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"pending","tool_name":"test/check"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/check"},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/check","message":"half","progress":1,"total":2},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"running","tool_name":"test/check","progress":3},` +
				`{"tool_call_id":"tc_0426a3b5ebe27a4c5365d1e6","status":"complete","tool_name":"test/check"}]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, streaming := range []bool{false, true} {
				exec := &stubExec{out: tc.out}
				obs := &observer{}
				rt := newTestRouter(t, exec, obs)
				if tc.name == "schema error" {
					// The registry's validator names the field; its text is not
					// the router's business.
					rt.Tools = func() pipeline.Tools { return schemaFails{} }
				}
				var updates []toolrouter.Update
				var emit func(toolrouter.Update)
				if streaming {
					emit = func(u toolrouter.Update) { updates = append(updates, u) }
				}
				res, err := rt.Stream(context.Background(), "p", decodeJSON(t, tc.payload), tc.meta, emit)
				if err != nil {
					t.Fatal(err)
				}
				if got := resultJSON(t, res); got != tc.want {
					t.Errorf("streaming=%v result\n%s\nwant\n%s", streaming, got, tc.want)
				}
				// Encoded once for the store and the answer: as json.Marshal would.
				plain := *res
				plain.JSON = nil
				if want, _ := json.Marshal(&plain); string(res.JSON) != string(want) {
					t.Errorf("JSON\n%s\nwant\n%s", res.JSON, want)
				}
				if len(obs.calls) != 1 || obs.calls[0] != tc.wantObs {
					t.Errorf("observed %v, want %v", obs.calls, tc.wantObs)
				}
				if streaming {
					b, _ := json.Marshal(updates)
					if string(b) != tc.wantUpdates {
						t.Errorf("updates\n%s\nwant\n%s", b, tc.wantUpdates)
					}
				} else if exec.req.Progress != nil {
					t.Error("a progress callback without streaming")
				}
			}
		})
	}
}

// schemaFails holds test/echo with a validator that always fails.
type schemaFails struct{}

func (schemaFails) Lookup(name string) (*toolrouter.Tool, bool) {
	if name != "test/echo" {
		return nil, false
	}
	return &toolrouter.Tool{Name: name, Endpoint: "http://127.0.0.1:9/echo", Kind: toolrouter.KindTool,
		ValidateArgs: func(map[string]any) error { return errSchema{} }}, true
}

func (s schemaFails) Tools() []*toolrouter.Tool {
	t, _ := s.Lookup("test/echo")
	return []*toolrouter.Tool{t}
}

type errSchema struct{}

func (errSchema) Error() string { return "SCHEMA" }

func TestBatchResultsInOrder(t *testing.T) {
	t.Parallel()
	exec := &stubExec{out: toolrouter.Outcome{Output: json.RawMessage(`{}`), Status: 200, Attempts: 1, Answered: true}}
	rt := newTestRouter(t, exec, nil)
	rt.BatchConcurrency = 1 // stubExec records one request at a time
	payloads := []any{
		decodeJSON(t, `{"id":"a","function":{"name":"test/echo","arguments":"{}"}}`),
		decodeJSON(t, `{"id":"b","function":{"name":"nope","arguments":"{}"}}`),
	}
	res, err := rt.Batch(context.Background(), "p", payloads, nil)
	if err != nil || len(res) != 2 {
		t.Fatalf("%v %v", res, err)
	}
	if *res[0].ProviderCallID != "a" || !res[0].Success || res[0].Sequence != 0 ||
		*res[1].ProviderCallID != "b" || res[1].Success || res[1].Sequence != 1 {
		t.Errorf("results %+v %+v", res[0], res[1])
	}
}

// toolMap is a Tools of fixed tools.
type toolMap map[string]*toolrouter.Tool

func (m toolMap) Lookup(name string) (*toolrouter.Tool, bool) { t, ok := m[name]; return t, ok }

func (m toolMap) Tools() []*toolrouter.Tool {
	return slices.SortedFunc(maps.Values(m), func(a, b *toolrouter.Tool) int { return strings.Compare(a.Name, b.Name) })
}

// TestRouteDispatchesByBackend: a tool of an MCP server goes to the MCP
// executor, any other to the HTTP one; without an MCP executor, an MCP
// tool fails with category resource.
func TestRouteDispatchesByBackend(t *testing.T) {
	t.Parallel()
	httpExec := &stubExec{out: toolrouter.Outcome{Output: json.RawMessage(`"http"`), Answered: true}}
	mcpExec := &stubExec{out: toolrouter.Outcome{Output: json.RawMessage(`"mcp"`), Answered: true}}
	tools := toolMap{
		"web":    {Name: "web", Endpoint: "http://127.0.0.1:9/web"},
		"s/echo": {Name: "s/echo", MCPServer: "s", MCPTool: "echo"},
	}
	r := &rig{Tools: func() pipeline.Tools { return tools }, Exec: httpExec, MCP: mcpExec, Seq: memory.New()}
	route := func(name string) *toolrouter.Result {
		t.Helper()
		res, err := r.Route(context.Background(), "p", map[string]any{"name": name, "arguments": map[string]any{}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := route("web"); string(res.Output) != `"http"` || httpExec.req.Tool.Name != "web" {
		t.Errorf("HTTP tool: %+v", res)
	}
	if res := route("s/echo"); string(res.Output) != `"mcp"` || mcpExec.req.Tool.Name != "s/echo" {
		t.Errorf("MCP tool: %+v", res)
	}
	r = &rig{Tools: func() pipeline.Tools { return tools }, Exec: httpExec, Seq: memory.New()} // MCP not enabled
	res := route("s/echo")
	if res.Success || *res.ErrorCategory != toolrouter.CategoryResource || *res.Error != "MCP server s unavailable: MCP is not enabled" {
		t.Errorf("MCP tool without MCP: %+v", res)
	}
}

// countingSeq counts the store round trips of sequence allocation.
type countingSeq struct {
	router.Sequencer
	one, block atomic.Int64
}

func (s *countingSeq) NextSequence(ctx context.Context, plan string) (int64, error) {
	s.one.Add(1)
	return s.Sequencer.NextSequence(ctx, plan)
}

func (s *countingSeq) NextSequences(ctx context.Context, plan string, n int64) (int64, error) {
	s.block.Add(1)
	return s.Sequencer.NextSequences(ctx, plan, n)
}

// A batch allocates its sequences in one store round trip, whatever its
// size (issue 10); its results go to Results, which queue them.
func TestBatchTakesOneSequenceBlock(t *testing.T) {
	t.Parallel()
	exec := &stubExec{out: toolrouter.Outcome{Output: json.RawMessage(`{}`), Status: 200, Attempts: 1, Answered: true}}
	rt := newTestRouter(t, exec, nil)
	seq := &countingSeq{Sequencer: memory.New()}
	rt.Seq = seq
	payloads := make([]any, 16)
	for i := range payloads {
		payloads[i] = decodeJSON(t, `{"function":{"name":"test/echo","arguments":"{}"}}`)
	}
	res, err := rt.Batch(context.Background(), "p", payloads, nil)
	if err != nil || len(res) != 16 {
		t.Fatalf("%v %v", res, err)
	}
	if seq.block.Load() != 1 || seq.one.Load() != 0 {
		t.Errorf("sequence round trips: %d blocks, %d single; want 1 block", seq.block.Load(), seq.one.Load())
	}
	for i, r := range res {
		if r.Sequence != int64(i) {
			t.Errorf("result %d has sequence %d", i, r.Sequence)
		}
	}
}

// TestPlanIDControlCharactersTakeNoSequence (issue 21 finding 12): a plan
// id with a control character, whatever the entry point, is invalid
// before any sequence is taken.
func TestPlanIDControlCharactersTakeNoSequence(t *testing.T) {
	exec := &stubExec{out: toolrouter.Outcome{Output: json.RawMessage(`{}`), Status: 200, Attempts: 1, Answered: true}}
	rt := newTestRouter(t, exec, nil)
	seq := &countingSeq{Sequencer: memory.New()}
	rt.Seq = seq
	call := decodeJSON(t, `{"function":{"name":"test/echo","arguments":"{}"}}`)
	for _, plan := range []string{"a\nb", "a\x00", "\x7f", strings.Repeat("é", 257)} {
		if _, err := rt.Route(context.Background(), plan, call, nil); toolrouter.ErrorCode(err) != toolrouter.EINVALID {
			t.Errorf("Route(%q): %v, want invalid", plan, err)
		}
		if _, err := rt.Batch(context.Background(), plan, []any{call}, nil); toolrouter.ErrorCode(err) != toolrouter.EINVALID {
			t.Errorf("Batch(%q): %v, want invalid", plan, err)
		}
	}
	if seq.block.Load() != 0 || seq.one.Load() != 0 {
		t.Errorf("sequences taken: %d blocks, %d single", seq.block.Load(), seq.one.Load())
	}
	if _, err := rt.Route(context.Background(), strings.Repeat("é", 256), call, nil); err != nil {
		t.Errorf("256 characters: %v", err)
	}
}
