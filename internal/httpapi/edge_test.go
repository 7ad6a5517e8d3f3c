package httpapi_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/api"
	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/approval"
	"github.com/toolrouterd/toolrouterd/internal/httpapi"
	"github.com/toolrouterd/toolrouterd/internal/metrics"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/remote"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/task"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

// The tests here drive httpapi.NewServer wired like cmd/toolrouterd (a real
// router, registry, memory store and metrics; the tool's network hop
// replaced by echoTransport), or with small fakes where a test needs to
// control the router or the runs.

// fakeRouter routes with function fields; nil ones fall back to real.
type fakeRouter struct {
	real   httpapi.Router
	route  func(ctx context.Context, planID string, payload any, meta map[string]any) (*toolrouter.Result, error)
	stream func(ctx context.Context, planID string, payload any, meta map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error)
}

// Do routes req with stream when it streams (Emit set), else with
// route; the payload they get is the request.
func (f *fakeRouter) Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error) {
	if req.Emit != nil && f.stream != nil {
		return f.stream(ctx, req.PlanID, req, req.Meta, req.Emit)
	}
	if req.Emit == nil && f.route != nil {
		return f.route(ctx, req.PlanID, req, req.Meta)
	}
	return f.real.Do(ctx, req)
}

func (f *fakeRouter) Batch(ctx context.Context, planID string, reqs []*toolrouter.CallRequest) ([]*toolrouter.Result, error) {
	return f.real.Batch(ctx, planID, reqs)
}

// fakeRuns answers /runs with function fields; nil ones use real.
type fakeRuns struct {
	real    httpapi.Runs
	start   func(ctx context.Context, req agent.Request) (*agent.Pending, error)
	execute func(ctx context.Context, pr *agent.Pending, emit func(agent.Event)) *toolrouter.Run
}

func (f *fakeRuns) Start(ctx context.Context, req agent.Request) (*agent.Pending, error) {
	if f.start != nil {
		return f.start(ctx, req)
	}
	return f.real.Start(ctx, req)
}

func (f *fakeRuns) Execute(ctx context.Context, pr *agent.Pending, emit func(agent.Event)) *toolrouter.Run {
	if f.execute != nil {
		return f.execute(ctx, pr, emit)
	}
	return f.real.Execute(ctx, pr, emit)
}

func (f *fakeRuns) Background(ctx context.Context, pr *agent.Pending) {
	if f.start != nil {
		return
	}
	f.real.Background(ctx, pr)
}

func (f *fakeRuns) Get(ctx context.Context, id string) (*toolrouter.Run, error) {
	return f.real.Get(ctx, id)
}

func (f *fakeRuns) List(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	return f.real.List(ctx, planID, limit)
}

func (f *fakeRuns) Cancel(ctx context.Context, id string) (*toolrouter.Run, bool, error) {
	return f.real.Cancel(ctx, id)
}

// testRun is a run as Start would make it.
func testRun() *toolrouter.Run {
	return &toolrouter.Run{RunID: "run_1", Status: toolrouter.RunRunning, Provider: "fake", Model: "m",
		ToolCalls: []toolrouter.ToolCallRecord{}, Context: toolrouter.ActorContext{PlanID: "plan"}, CreatedAt: time.Now().UTC()}
}

type server struct {
	h      http.Handler
	tasks  *task.Runner
	router *fakeRouter
	runs   *fakeRuns
	log    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newServer wires the handler like cmd/toolrouterd/serve.go; edit may
// change the dependencies first.
func newServer(t testing.TB, edit ...func(*httpapi.Deps)) *server {
	t.Helper()
	return newServerWith(t, nil, edit...)
}

// newServerWith is newServer with its router's options changed by opts
// (nil: none) before it is built.
func newServerWith(t testing.TB, opts func(*router.Options), edit ...func(*httpapi.Deps)) *server {
	t.Helper()
	reg, err := registry.Parse("test.yaml", []byte(benchRegistry), os.Getenv)
	if err != nil {
		t.Fatalf("parse registry: %v", err)
	}
	holder := registry.NewHolder("test.yaml", os.Getenv, reg)
	st := memory.New()
	m := metrics.New()
	finish := &router.Finisher{Results: st, Observer: m}
	keeper := &approval.Keeper{Store: st, Results: st, Finish: finish, Tools: func() approval.Tools { return holder.Current() }}
	o := router.Options{
		Exec:             remote.New(remote.Options{Transport: echoTransport{}}),
		Seq:              st,
		Finish:           finish,
		BatchConcurrency: 4,
		Stages: []toolrouter.Stage{pipeline.Resolve(func() pipeline.Tools { return holder.Current() }), pipeline.Validate,
			keeper.Stage, pipeline.BatchBudget, pipeline.CheckOutput},
	}
	if opts != nil {
		opts(&o)
	}
	rt := router.New(o)
	runner := &agent.Runner{Router: rt, Registry: func() agent.Registry { return holder.Current() }, Runs: st, Owner: "test"}
	s := &server{router: &fakeRouter{real: rt}, runs: &fakeRuns{real: runner}, log: &syncBuffer{}}
	s.tasks = &task.Runner{Store: st, Router: s.router, Results: keeper}
	views := vserver.Build(registry.Empty())
	d := httpapi.Deps{
		Logger:       zerolog.New(s.log),
		Router:       s.router,
		Tools:        func() httpapi.Tools { return holder.Current() },
		Readiness:    st,
		Metrics:      m,
		Runs:         s.runs,
		Approvals:    keeper,
		Tasks:        s.tasks,
		Keys:         st,
		Audit:        st,
		MaxBodyBytes: 1 << 20,
		Spec:         api.Spec,
		MCP:          http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }),
		Views:        func() *vserver.Set { return views }, // built once, as vserver.Catalog.Current keeps it
		VirtualMCP:   func(string) http.Handler { return http.NotFoundHandler() },
	}
	for _, e := range edit {
		e(&d)
	}
	h, err := httpapi.NewServer(d)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	s.h = h
	return s
}

// serve sends one request through the handler; header is name, value, ….
func (s *server) serve(method, target, body string, header ...string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, req)
	return w
}

type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Field  string `json:"field"`
}

// problemOf decodes a problem+json answer, failing t if it is not one.
func problemOf(t *testing.T, w *httptest.ResponseRecorder) problemDoc {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d, Content-Type %q, want application/problem+json: %s", w.Code, ct, w.Body)
	}
	var p problemDoc
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("problem: %v: %s", err, w.Body)
	}
	if p.Status != w.Code || p.Title == "" || p.Detail == "" || p.Type == "" {
		t.Errorf("incomplete problem for %d: %s", w.Code, w.Body)
	}
	return p
}

const echoCall = `{"plan_id":"p","tool_call":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}`

// TestEscapedPathParameters: chi routes /runs/a%2Fb on the escaped path;
// the request check used a second router on the decoded path, found no
// operation and answered 500. Parameters reach handlers unescaped.
func TestEscapedPathParameters(t *testing.T) {
	s := newServer(t)
	for _, target := range []string{"/runs/a%2Fb", "/runs/%2F", "/runs/%ff", "/runs/x%00y", "/runs/100%25", "/runs/a%20b"} {
		w := s.serve("GET", target, "")
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", target, w.Code, w.Body)
			continue
		}
		problemOf(t, w)
	}
	if w := s.serve("GET", "/runs/a%2Fb", ""); !strings.Contains(w.Body.String(), `run \"a/b\" not found`) {
		t.Errorf("id not unescaped: %s", w.Body)
	}
	if w := s.serve("GET", "/runs/100%25", ""); !strings.Contains(w.Body.String(), `run \"100%\" not found`) {
		t.Errorf("id unescaped twice: %s", w.Body)
	}
	if w := s.serve("GET", "/schemas/open%61i", ""); w.Code != http.StatusOK {
		t.Errorf("GET /schemas/open%%61i: %d %s", w.Code, w.Body)
	}
	if w := s.serve("GET", "/schemas/open%2Fai", ""); w.Code != http.StatusNotFound {
		t.Errorf("GET /schemas/open%%2Fai: %d %s", w.Code, w.Body)
	}
	// A misspelt format gets the closest (issue 38); one close to none not.
	if w := s.serve("GET", "/schemas/openia", ""); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `unknown provider \"openia\"; did you mean \"openai\"? valid: `) {
		t.Errorf("GET /schemas/openia: %d %s", w.Code, w.Body)
	}
	if w := s.serve("GET", "/schemas/cohere", ""); w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "did you mean") {
		t.Errorf("GET /schemas/cohere: %d %s", w.Code, w.Body)
	}
}

// TestEveryRouteIsInTheSpec: the request check looks operations up by the
// route chi matched, so every route must be in api/openapi.yaml (or the
// check answers 500), and every operation of the spec must be served.
func TestEveryRouteIsInTheSpec(t *testing.T) {
	s := newServer(t)
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	inSpec := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inSpec[method+" "+path] = true
		}
	}
	served := map[string]bool{}
	err = chi.Walk(s.h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route == "/mcp" || route == "/mcp/{server}" { // every method goes to the MCP transport
			for _, m := range []string{"GET", "POST", "DELETE"} {
				served[m+" "+route] = true
			}
			return nil
		}
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for op := range served {
		if !inSpec[op] {
			t.Errorf("%s is served but not in api/openapi.yaml", op)
		}
	}
	for op := range inSpec {
		if !served[op] {
			t.Errorf("%s is in api/openapi.yaml but not served", op)
		}
	}
}

// TestFieldNamesInProblems: a missing field is named once ("tool_call", not
// "tool_call.tool_call"), an unknown nested field by its path.
func TestFieldNamesInProblems(t *testing.T) {
	s := newServer(t)
	cases := []struct {
		path, body, field, detail string
	}{
		{"/route", `{"plan_id":"p"}`, "tool_call", "tool_call: is required"},
		{"/route", `{}`, "plan_id", "plan_id: is required; tool_call: is required"},
		{"/route", `{"plan_id":"p","tool_call":{},"toolcall":1}`, "toolcall", "toolcall: unknown field"},
		{"/runs", `{"prompt":"hi","context":{}}`, "context.plan_id", "context.plan_id: is required"},
		{"/runs", `{"prompt":"hi","context":{"plan_id":"x","bogus":1}}`, "context.bogus", "context.bogus: unknown field"},
		{"/runs", `{"prompt":"hi","context":{"plan_id":"x","a\"b":1}}`, `context.a"b`, `context.a"b: unknown field`},
	}
	for _, c := range cases {
		w := s.serve("POST", c.path, c.body)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", c.body, w.Code, w.Body)
			continue
		}
		p := problemOf(t, w)
		if p.Field != c.field || p.Detail != c.detail {
			t.Errorf("%s: field %q detail %q, want %q %q", c.body, p.Field, p.Detail, c.field, c.detail)
		}
	}
}

// TestNumbersOutOfRange: valid JSON numbers no float64 or int holds are
// 400s that say so and name the field they can.
func TestNumbersOutOfRange(t *testing.T) {
	s := newServer(t)
	w := s.serve("POST", "/route", `{"plan_id":"p","tool_call":{"name":"test/echo","arguments":{"a":1e400}}}`)
	if p := problemOf(t, w); w.Code != 400 || !strings.Contains(p.Detail, "number 1e400 is out of range") {
		t.Errorf("1e400: %d %s", w.Code, w.Body)
	}
	for _, body := range []string{`{"prompt":"hi","max_iterations":1e300}`, `{"prompt":"hi","max_iterations":99999999999999999999}`} {
		w := s.serve("POST", "/runs", body)
		if p := problemOf(t, w); w.Code != 400 || p.Field != "max_iterations" || !strings.HasPrefix(p.Detail, "max_iterations: ") || strings.Contains(p.Detail, "Go struct") {
			t.Errorf("%s: %d %s", body, w.Code, w.Body)
		}
	}
}

// TestHeadOptionsAndAllow: HEAD works wherever GET does, OPTIONS answers
// 204 with Allow, and 405 carries Allow (RFC 9110).
func TestHeadOptionsAndAllow(t *testing.T) {
	s := newServer(t)
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml", "/schemas/openai", "/runs?plan_id=p"} {
		if w := s.serve("HEAD", path, ""); w.Code != http.StatusOK {
			t.Errorf("HEAD %s: %d %s", path, w.Code, w.Body)
		}
	}
	if w := s.serve("HEAD", "/schemas/nope", ""); w.Code != http.StatusNotFound {
		t.Errorf("HEAD /schemas/nope: %d", w.Code)
	}
	w := s.serve("OPTIONS", "/route", "")
	if w.Code != http.StatusNoContent || w.Header().Get("Allow") != "POST, OPTIONS" {
		t.Errorf("OPTIONS /route: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	w = s.serve("OPTIONS", "/runs", "")
	if w.Code != http.StatusNoContent || w.Header().Get("Allow") != "GET, HEAD, POST, OPTIONS" {
		t.Errorf("OPTIONS /runs: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	w = s.serve("DELETE", "/route", "")
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST, OPTIONS" {
		t.Errorf("DELETE /route: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	problemOf(t, w)
	if w := s.serve("OPTIONS", "/nope", ""); w.Code != http.StatusNotFound {
		t.Errorf("OPTIONS /nope: %d", w.Code)
	}
}

// TestTrailingSlash: /route/ is not /route, and the 404 says which path
// was meant; nor is //route, and /runs// is not a run named "/".
func TestTrailingSlash(t *testing.T) {
	s := newServer(t)
	w := s.serve("POST", "/route/", echoCall)
	if p := problemOf(t, w); w.Code != 404 || !strings.Contains(p.Detail, "without the trailing slash: /route") {
		t.Errorf("POST /route/: %d %s", w.Code, w.Body)
	}
	for _, path := range []string{"//route", "/runs//", "/runs//x", "/schemas//openai"} {
		w := s.serve("POST", path, echoCall)
		if p := problemOf(t, w); w.Code != 404 || !strings.Contains(p.Detail, "empty path segment") {
			t.Errorf("POST %s: %d %s", path, w.Code, w.Body)
		}
	}
	w = s.serve("GET", "/nothing/", "")
	if p := problemOf(t, w); w.Code != 404 || strings.Contains(p.Detail, "trailing") {
		t.Errorf("GET /nothing/: %d %s", w.Code, w.Body)
	}
}

// TestContentTypeParameters: charset and case do not matter; other media
// types are 415.
func TestContentTypeParameters(t *testing.T) {
	s := newServer(t)
	for ct, want := range map[string]int{
		"application/json":                  200,
		"application/json; charset=utf-8":   200,
		"application/json;charset=UTF-8":    200,
		"Application/JSON":                  200,
		"text/plain":                        415,
		"application/x-www-form-urlencoded": 415,
		"":                                  415,
		"application/json; charset":         415, // malformed parameter
	} {
		w := s.serve("POST", "/route", echoCall, "Content-Type", ct)
		if w.Code != want {
			t.Errorf("Content-Type %q: %d, want %d: %s", ct, w.Code, want, w.Body)
		}
	}
}

// TestAcceptNegotiation: /route streams when the client prefers
// text/event-stream by q-value; a tie (or */*) is JSON.
func TestAcceptNegotiation(t *testing.T) {
	s := newServer(t)
	for accept, stream := range map[string]bool{
		"":                                    false,
		"application/json":                    false,
		"*/*":                                 false,
		"text/event-stream":                   true,
		"TEXT/Event-Stream":                   true,
		"text/event-stream; charset=utf-8":    true,
		"text/*":                              true,
		"application/json, text/event-stream": false,
		"text/event-stream, application/json": false,
		"text/event-stream, application/json;q=0.5": true,
		"text/event-stream;q=0.9, application/json": false,
		"text/event-stream;q=0, application/json":   false,
		"text/event-stream;q=0":                     false,
		"text/event-stream;q=abc":                   false,
		"text/event-stream, */*;q=0.1":              true,
		"text/*;q=0.5, text/event-stream;q=0":       false,
		",,;;text/event-stream":                     false,
	} {
		w := s.serve("POST", "/route", echoCall, "Accept", accept)
		got := strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
		if w.Code != 200 || got != stream {
			t.Errorf("Accept %q: %d %q, want stream=%v", accept, w.Code, w.Header().Get("Content-Type"), stream)
		}
	}
}

// TestBearerScheme: the auth scheme is case-insensitive; the key is not.
func TestBearerScheme(t *testing.T) {
	s := newServer(t, func(d *httpapi.Deps) {
		d.Auth = access.NewAuthenticator([]string{"k1"}, registry.Empty, nil)
	})
	for auth, want := range map[string]int{
		"Bearer k1":   200,
		"bearer k1":   200,
		"BEARER k1":   200,
		"Bearer  k1 ": 200,
		"Bearer K1":   401,
		"Bearerk1":    401,
		"Basic k1":    401,
		"k1":          401,
		"Bearer":      401,
		"":            401,
	} {
		w := s.serve("POST", "/route", echoCall, "Authorization", auth)
		if w.Code != want {
			t.Errorf("Authorization %q: %d, want %d", auth, w.Code, want)
		}
		if want == 401 && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: 401 without WWW-Authenticate", auth)
		}
	}
}

// TestPreferRespondAsync: respond-async counts with parameters and among
// other preferences (RFC 7240).
func TestPreferRespondAsync(t *testing.T) {
	s := newServer(t)
	s.runs.start = func(context.Context, agent.Request) (*agent.Pending, error) {
		return &agent.Pending{Run: testRun()}, nil
	}
	s.runs.execute = func(context.Context, *agent.Pending, func(agent.Event)) *toolrouter.Run {
		run := testRun()
		run.Status = toolrouter.RunCompleted
		return run
	}
	for prefer, want := range map[string]int{
		"respond-async":          202,
		"Respond-Async":          202,
		"respond-async; foo=bar": 202,
		"wait=5, respond-async":  202,
		"handling=lenient":       200,
		"respond-asynchronously": 200,
		"":                       200,
	} {
		w := s.serve("POST", "/runs", `{"prompt":"hi"}`, "Prefer", prefer)
		if w.Code != want {
			t.Errorf("Prefer %q: %d, want %d", prefer, w.Code, want)
		}
		if want == 202 && (w.Header().Get("Location") != "/runs/run_1" || w.Header().Get("Preference-Applied") != "respond-async") {
			t.Errorf("Prefer %q: headers %v", prefer, w.Header())
		}
	}
}

// TestLateStreamUpdateIsDropped: an update the router emits after Stream
// returned (a progress notification arriving late) must not be written to
// the finished response.
func TestLateStreamUpdateIsDropped(t *testing.T) {
	s := newServer(t)
	late := make(chan func(toolrouter.Update), 1)
	s.router.stream = func(ctx context.Context, planID string, payload any, meta map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error) {
		emit(toolrouter.Update{ToolCallID: "tc_000000000000000000000000", Status: toolrouter.StatusPending})
		late <- emit
		return &toolrouter.Result{ToolCallID: "tc_000000000000000000000000", PlanID: planID}, nil
	}
	w := s.serve("POST", "/route", echoCall, "Accept", "text/event-stream")
	(<-late)(toolrouter.Update{ToolCallID: "tc_000000000000000000000000", Status: toolrouter.StatusRunning})
	body := w.Body.String()
	if strings.Contains(body, `"running"`) || !strings.HasSuffix(strings.TrimSpace(body), "}") || !strings.Contains(body, "event: result") {
		t.Errorf("stream after a late update:\n%s", body)
	}
}

// TestClientGoneIsNotAServerError: a store call cut short because the
// client hung up is not logged or counted as a 500.
func TestClientGoneIsNotAServerError(t *testing.T) {
	s := newServer(t)
	routing := make(chan struct{})
	s.router.route = func(ctx context.Context, _ string, _ any, _ map[string]any) (*toolrouter.Result, error) {
		close(routing)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("POST", "/route", strings.NewReader(echoCall)).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	go func() { <-routing; cancel() }() // the client hangs up mid-call
	s.h.ServeHTTP(w, req)
	if w.Code >= 500 && w.Code != 499 || strings.Contains(s.log.String(), `"level":"error"`) {
		t.Errorf("client gone: %d; log:\n%s", w.Code, s.log.String())
	}
}

// TestIdempotentCallOutlivesTheClient: a client that times out and retries
// with the same Idempotency-Key gets the tool's real answer, not a stored
// "call cancelled".
func TestIdempotentCallOutlivesTheClient(t *testing.T) {
	s := newServer(t)
	var calls sync.WaitGroup
	calls.Add(1)
	s.router.route = func(ctx context.Context, planID string, _ any, _ map[string]any) (*toolrouter.Result, error) {
		defer calls.Done()
		res := &toolrouter.Result{ToolCallID: "tc_000000000000000000000000", PlanID: planID, Success: true}
		select {
		case <-ctx.Done():
			msg := "call cancelled: " + ctx.Err().Error()
			res.Success, res.Error = false, &msg
		case <-time.After(300 * time.Millisecond):
		}
		return res, nil
	}
	srv := httptest.NewServer(s.h)
	defer srv.Close()
	post := func(timeout time.Duration) (*http.Response, []byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/route", strings.NewReader(echoCall))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "retry-me")
		resp, err := srv.Client().Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	if _, _, err := post(50 * time.Millisecond); err == nil {
		t.Fatal("the first request did not time out")
	}
	resp, body, err := post(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"success":true`) {
		t.Errorf("retry: %d %s", resp.StatusCode, body)
	}
	calls.Wait()
}

// settleGoroutines waits until the goroutine count is back to at most
// want, failing t after a while.
func settleGoroutines(t *testing.T, want int) {
	t.Helper()
	if err := poll.Wait(5*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > want {
			return fmt.Errorf("%d goroutines, want at most %d", n, want)
		}
		return nil
	}); err != nil {
		buf := make([]byte, 1<<20)
		t.Fatalf("%v:\n%s", err, buf[:runtime.Stack(buf, true)])
	}
}

// TestSSEDisconnectLeavesNoGoroutine: a client that drops a /route or
// /runs stream ends the handler and its heartbeat.
func TestSSEDisconnectLeavesNoGoroutine(t *testing.T) {
	s := newServer(t)
	ended := make(chan struct{}, 8)
	s.router.stream = func(ctx context.Context, planID string, _ any, _ map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error) {
		defer func() { ended <- struct{}{} }()
		emit(toolrouter.Update{ToolCallID: "tc_000000000000000000000000", Status: toolrouter.StatusRunning})
		<-ctx.Done()
		return &toolrouter.Result{ToolCallID: "tc_000000000000000000000000", PlanID: planID}, nil
	}
	s.runs.start = func(context.Context, agent.Request) (*agent.Pending, error) {
		return &agent.Pending{Run: testRun()}, nil
	}
	s.runs.execute = func(ctx context.Context, pr *agent.Pending, emit func(agent.Event)) *toolrouter.Run {
		defer func() { ended <- struct{}{} }()
		emit(agent.Event{Type: "run_started", Data: pr.Run})
		<-ctx.Done()
		return pr.Run
	}
	closed := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(s.h)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	open := func(path, body string) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "event: ") {
			t.Fatalf("%s: first line %q %v", path, line, err)
		}
		resp.Body.Close() // hang up mid-stream
	}
	open("/route", echoCall) // warm up lazily started goroutines
	<-ended
	<-closed // and the warm-up's connection is gone
	before := runtime.NumGoroutine()
	for i := 0; i < 5; i++ {
		open("/route", echoCall)
		open("/runs", `{"prompt":"hi"}`)
	}
	for i := 0; i < 10; i++ {
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Fatal("a stream's work did not end after the client hung up")
		}
	}
	settleGoroutines(t, before)
}

// FuzzRequest: no request makes a handler answer 5xx, and every 4xx is a
// problem with a detail. Plain `go test` runs the seeds; explore with
// go test -run='^$' -fuzz=FuzzRequest ./internal/httpapi/
func FuzzRequest(f *testing.F) {
	seeds := []struct{ method, path, ctype, body string }{
		{"POST", "/route", "application/json", echoCall},
		{"POST", "/route", "application/json", `{"plan_id":"p","tool_call":{"functionCall":{"name":"test/echo","args":"x"}}}`},
		{"POST", "/route", "application/json", `{"plan_id":"p","tool_call":{"toolUse":{"toolUseId":1,"name":"test/echo","input":[]}}}`},
		{"POST", "/route", "application/json", `{"plan_id":"p","tool_call":{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"test/echo","arguments":"\"{}\""}}}`},
		{"POST", "/route", "application/json", `{"plan_id":"p","tool_call":{"type":"tool_use","id":null,"name":"test/echo","input":{"msg":1e308}}}`},
		{"POST", "/route", "application/json", `{"plan_id":"p","tool_call":{"name":"test/echo","args":{"msg":"x"},"id":"c","type":"tool_call"},"provider_metadata":{"a":[1,{"b":null}]}}`},
		{"POST", "/route", "application/json", `{"plan_id":"p","tool_call":{"name":"test/echo","arguments":"{\"msg\":\"\\ud800\"}"}}`},
		{"POST", "/route", "application/json", "{\"plan_id\":\"p\xff\",\"tool_call\":{\"name\":\"\xfe\"}}"},
		{"POST", "/route", "application/json", `{"plan_id":"p","plan_id":1,"tool_call":{}}`},
		{"POST", "/route", "text/plain", echoCall},
		{"POST", "/route", "application/json", ``},
		{"POST", "/route", "application/json", `[[[[[[[[[[[[[[[[[[[[`},
		{"POST", "/route/batch", "application/json", `{"plan_id":"p","tool_calls":[{"name":"test/echo"},{"function":{"name":"test/echo","arguments":7}}]}`},
		{"POST", "/route/batch", "application/json", `{"plan_id":"p","tool_calls":{}}`},
		{"POST", "/runs", "application/json", `{"prompt":"hi","max_iterations":-1,"context":{"plan_id":"x","resource_bindings":{"a":1}}}`},
		{"POST", "/runs", "application/json", `{"prompt":"hi","repeat_limit":1e10,"tools":["test/echo"],"tool_choice":"auto"}`},
		{"GET", "/schemas/openai?max_description_length=1", "", ""},
		{"GET", "/schemas/anthropic?max_description_length=1e9", "", ""},
		{"GET", "/schemas/%ff?max_description_length=0", "", ""},
		{"GET", "/runs?plan_id=p&limit=-1&limit=2", "", ""},
		{"GET", "/runs/%2e%2e", "", ""},
		{"GET", "/runs/a%2Fb", "", ""},
		{"DELETE", "/route", "", ""},
		{"PATCH", "/healthz", "application/json", `{}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.ctype, s.body)
	}
	s := newServer(f)
	f.Fuzz(func(t *testing.T, method, path, ctype, body string) {
		switch method {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		default:
			method = "POST"
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n#") {
			path = "/route"
		}
		if strings.HasPrefix(path, "/mcp") {
			return // the MCP SDK's transport, tested in internal/mcpserver
		}
		req, err := http.NewRequest(method, "http://toolrouterd"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.RequestURI = path
		req.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s (%s) %q: %d %s", method, path, ctype, body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			var p problemDoc
			if w.Header().Get("Content-Type") != "application/problem+json" || json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Detail == "" || p.Status != w.Code {
				t.Fatalf("%s %s: %d is not a problem with a detail: %q", method, path, w.Code, w.Body)
			}
		}
	})
}

// TestContentEncoding: a compressed body is 415 naming Content-Encoding,
// not a puzzling "not valid JSON".
func TestContentEncoding(t *testing.T) {
	s := newServer(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(echoCall))
	zw.Close()
	w := s.serve("POST", "/route", gz.String(), "Content-Encoding", "gzip")
	if p := problemOf(t, w); w.Code != http.StatusUnsupportedMediaType || p.Field != "Content-Encoding" {
		t.Errorf("gzip: %d %s", w.Code, w.Body)
	}
	if w := s.serve("POST", "/route", echoCall, "Content-Encoding", "identity"); w.Code != 200 {
		t.Errorf("identity: %d %s", w.Code, w.Body)
	}
}

// TestSlowBody: a body that does not arrive in time is 408 and frees the
// connection; the deadline does not outlive the body, so a stream may run
// longer.
func TestSlowBody(t *testing.T) {
	s := newServer(t, func(d *httpapi.Deps) { d.BodyReadTimeout = 300 * time.Millisecond })
	s.router.stream = func(ctx context.Context, planID string, _ any, _ map[string]any, emit func(toolrouter.Update)) (*toolrouter.Result, error) {
		emit(toolrouter.Update{ToolCallID: "tc_000000000000000000000000", Status: toolrouter.StatusRunning})
		select {
		case <-time.After(600 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &toolrouter.Result{ToolCallID: "tc_000000000000000000000000", PlanID: planID, Success: true}, nil
	}
	srv := httptest.NewServer(s.h)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"plan_id\"")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 3*time.Second {
		t.Errorf("trickled body: %d after %s", resp.StatusCode, time.Since(start))
	}

	req, _ := http.NewRequest("POST", srv.URL+"/route", strings.NewReader(echoCall))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	sresp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if !strings.Contains(string(b), "event: result") {
		t.Errorf("a stream longer than the body deadline was cut: %s", b)
	}
}

// TestMetricsMethodLabelIsBounded: made-up methods share one label, so a
// client cannot grow the metrics without end.
func TestMetricsMethodLabelIsBounded(t *testing.T) {
	s := newServer(t)
	for i := 0; i < 50; i++ {
		s.serve(fmt.Sprintf("M%d", i), "/route", "")
	}
	metrics := s.serve("GET", "/metrics", "").Body.String()
	if strings.Contains(metrics, `method="M1"`) || !strings.Contains(metrics, `method="OTHER"`) {
		t.Errorf("method labels:\n%s", grep(metrics, "toolrouter_http_requests_total"))
	}
}

func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestNewServerRefusesMissingDependencies: a dependency left out is an
// error naming it at construction, not a panic on the first request.
func TestNewServerRefusesMissingDependencies(t *testing.T) {
	for name, clear := range map[string]func(*httpapi.Deps){
		"Router":    func(d *httpapi.Deps) { d.Router = nil },
		"Tools":     func(d *httpapi.Deps) { d.Tools = nil },
		"Readiness": func(d *httpapi.Deps) { d.Readiness = nil },
		"Metrics":   func(d *httpapi.Deps) { d.Metrics = nil },
		"Runs":      func(d *httpapi.Deps) { d.Runs = nil },
		"Keys":      func(d *httpapi.Deps) { d.Keys = nil },
		"Spec":      func(d *httpapi.Deps) { d.Spec = nil },
	} {
		var deps httpapi.Deps
		newServer(t, func(d *httpapi.Deps) { deps = *d })
		clear(&deps)
		if _, err := httpapi.NewServer(deps); err == nil || !strings.Contains(err.Error(), "Deps."+name+" is required") {
			t.Errorf("without %s: %v", name, err)
		}
	}
}

// TestExpectContinueRejection: a request with "Expect: 100-continue" that
// is answered without its body being read (here a 415) leaves the
// connection usable, whether the client sends the body at once (RFC 9110
// §10.1.1 allows it) or waits for "100 Continue". net/http alone closes the
// connection after such an answer and the early body meets a reset, which
// the client saw as "write: broken pipe" (TestEdgeFuzz).
func TestExpectContinueRejection(t *testing.T) {
	s := newServer(t)
	srv := httptest.NewServer(s.h)
	defer srv.Close()
	body := `{"plan_id":"p","tool_call":{"name":"test/echo","arguments":"` + strings.Repeat("x", 200_000) + `"}}`
	head := fmt.Sprintf("POST /route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body))

	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("waits for 100 Continue: %v", wait), func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			read := func() *http.Response {
				t.Helper()
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					t.Fatalf("reading the answer's body: %v", err)
				}
				resp.Body.Close()
				return resp
			}
			sent := make(chan error, 1)
			if wait {
				io.WriteString(conn, head)
				if resp := read(); resp.StatusCode != http.StatusContinue {
					t.Fatalf("want 100 Continue before the body, got %d", resp.StatusCode)
				}
				_, err := io.WriteString(conn, body)
				sent <- err
			} else {
				go func() { _, err := io.WriteString(conn, head+body); sent <- err }()
			}
			resp := read()
			for resp.StatusCode == http.StatusContinue {
				resp = read()
			}
			if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Close {
				t.Fatalf("got %d (Connection: close %v), want 415 on a connection left open", resp.StatusCode, resp.Close)
			}
			if err := <-sent; err != nil {
				t.Fatalf("sending the body: %v", err)
			}
			io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
			if resp := read(); resp.StatusCode != http.StatusOK {
				t.Errorf("next request on the connection: %d", resp.StatusCode)
			}
		})
	}
}
