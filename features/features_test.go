package features_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cucumber/godog"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/config"
	"github.com/toolrouterd/toolrouterd/internal/exampletools"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/service"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func TestFeatures(t *testing.T) {
	suite := godog.TestSuite{
		Name:                "toolrouterd",
		ScenarioInitializer: initializeScenario,
		Options: &godog.Options{
			Format:      "pretty",
			Paths:       []string{"."},
			TestingT:    t,
			Strict:      true,
			Concurrency: 4,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("the feature suite failed")
	}
}

// ---------------------------------------------------------------------------
// Scenario state

type stateKey struct{}

// toolEntry is one tool of the registry file a scenario builds.
type toolEntry struct {
	name        string
	description string
	path        string // path on the tool server: /echo, /fail, /crash, …
	kind        toolrouter.ToolKind
	// outputSchema is the YAML flow text of output_schema, "" for none.
	outputSchema string
}

// specInputSchema is the input schema of every tool a scenario registers.
const specInputSchemaYAML = "{type: object, properties: {msg: {type: string}}}"

func specInputSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}
}

// state is everything one scenario knows. It lives in the scenario's
// context.Context, so scenarios can run concurrently.
type state struct {
	// unit level: detection, normalization, ids, classification, schemas
	payload   any
	detected  toolrouter.Format
	call      toolrouter.Call
	normDone  bool
	ids       []string
	category  toolrouter.ErrorCategory
	classDone bool
	// errs are the "ValueError" texts of the last "try" step: the message
	// of a direct call's error, or the detail of an HTTP problem.
	errs []string

	spec         *toolrouter.Tool
	schemaFormat toolrouter.Format
	schemaDef    map[string]any // format.Definition of spec
	schemaItem   map[string]any // the /schemas item of spec

	// the service
	entries []toolEntry
	roles   map[string]string // "error", "fail", "validation" → tool name
	toolSrv *httptest.Server
	apiSrv  *httptest.Server
	svc     *service.Service
	client  *http.Client
	planID  string
	planSet bool
	meta    map[string]any
	batch   []any

	result   map[string]any   // last RouteResult
	results  []map[string]any // last batch
	updates  []map[string]any // last stream's updates
	final    map[string]any   // last stream's result
	events   []sseEvent       // last stream, every event
	exported []map[string]any // last /schemas tools
}

func getState(ctx context.Context) *state {
	s, _ := ctx.Value(stateKey{}).(*state)
	if s == nil {
		panic("features: scenario state missing from context")
	}
	return s
}

func (s *state) close() {
	if s.apiSrv != nil {
		s.apiSrv.Close()
	}
	if s.toolSrv != nil {
		s.toolSrv.Close()
	}
	if s.svc != nil {
		s.svc.Close()
	}
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
}

// ---------------------------------------------------------------------------
// Real servers

// crashTraceback is what a tool that raises RuntimeError answers: a plain
// text 500 with no JSON body of its own.
const crashTraceback = "Traceback (most recent call last):\n  File \"tool.py\", line 7, in run\n    raise RuntimeError(\"boom\")\nRuntimeError: boom\n"

func handleCrash(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = io.WriteString(w, crashTraceback)
}

// toolServer starts the scenario's tool server: the example tools plus
// /crash.
func (s *state) toolServer() string {
	if s.toolSrv == nil {
		mux := http.NewServeMux()
		mux.Handle("/", exampletools.Handler())
		mux.HandleFunc("POST /crash", handleCrash)
		s.toolSrv = httptest.NewServer(mux)
	}
	return s.toolSrv.URL
}

func (s *state) addTool(e toolEntry) {
	s.entries = append(s.entries, e)
}

func (s *state) registryYAML(base string) string {
	var b strings.Builder
	b.WriteString("tools:\n")
	for _, e := range s.entries {
		fmt.Fprintf(&b, "  - name: %s\n", strconv.Quote(e.name))
		fmt.Fprintf(&b, "    description: %s\n", strconv.Quote(e.description))
		fmt.Fprintf(&b, "    endpoint: %s\n", strconv.Quote(base+e.path))
		fmt.Fprintf(&b, "    kind: %s\n", e.kind)
		fmt.Fprintf(&b, "    input_schema: %s\n", specInputSchemaYAML)
		if e.outputSchema != "" {
			fmt.Fprintf(&b, "    output_schema: %s\n", e.outputSchema)
		}
		b.WriteString("    timeout: 10s\n")
	}
	return b.String()
}

// service starts toolrouterd for the scenario (once), wired like
// cmd/toolrouterd/serve.go, with the scenario's registry and a memory store.
func (s *state) service() error {
	if s.apiSrv != nil {
		return nil
	}
	base := s.toolServer()
	data := s.registryYAML(base)
	reg, err := registry.Parse("features-registry.yaml", []byte(data), func(string) string { return "" })
	if err != nil {
		return fmt.Errorf("registry.Parse rejected the scenario's registry:\n%s\n%w", data, err)
	}
	if got, want := len(reg.Tools()), len(s.entries); got != want {
		return fmt.Errorf("registry has %d tools, want %d", got, want)
	}
	for _, e := range s.entries {
		t, ok := reg.Lookup(e.name)
		if !ok {
			return fmt.Errorf("registry lookup of %q failed", e.name)
		}
		if t.Name != e.name || t.Kind != e.kind {
			return fmt.Errorf("registry tool %q: want name %q kind %q, got name %q kind %q", e.name, e.name, e.kind, t.Name, t.Kind)
		}
	}
	svc, err := startService(reg, func(string) string { return "" }, "features-router")
	if err != nil {
		return err
	}
	s.svc = svc
	handler := svc.Handler
	s.apiSrv = httptest.NewServer(handler)
	s.client = &http.Client{Timeout: 30 * time.Second}
	return nil
}

// startService wires toolrouterd as cmd/toolrouterd does (internal/service),
// with the configuration TestMain sets (a memory store) and the scenario's
// registry.
func startService(reg *registry.Registry, getenv func(string) string, owner string) (*service.Service, error) {
	cfg, err := config.Load() // the defaults with a memory store (TestMain)
	if err != nil {
		return nil, err
	}
	return service.New(context.Background(), service.Options{Config: cfg, Registry: reg, Getenv: getenv, Logger: zerolog.Nop(), Owner: owner})
}

// ---------------------------------------------------------------------------
// HTTP helpers

type reply struct {
	status int
	ctype  string
	body   []byte
}

func (r reply) String() string {
	return fmt.Sprintf("HTTP %d (%s): %s", r.status, r.ctype, bytes.TrimSpace(r.body))
}

func (s *state) do(method, path string, body any, accept string) (reply, error) {
	if err := s.service(); err != nil {
		return reply{}, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return reply{}, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.apiSrv.URL+path, rd)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return reply{status: resp.StatusCode, ctype: mt, body: b}, nil
}

// jsonOK decodes a 200 application/json reply into v.
func jsonOK(r reply, v any) error {
	if r.status != http.StatusOK {
		return fmt.Errorf("want HTTP 200, got %s", r)
	}
	if r.ctype != "application/json" {
		return fmt.Errorf("want Content-Type application/json, got %s", r)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("decode reply: %v: %s", err, r.body)
	}
	return nil
}

// problemDetail checks that r is an RFC 9457 problem with the given status
// and returns its detail.
func problemDetail(r reply, status int) (string, error) {
	if r.status != status {
		return "", fmt.Errorf("want HTTP %d problem, got %s", status, r)
	}
	if r.ctype != "application/problem+json" {
		return "", fmt.Errorf("want Content-Type application/problem+json, got %s", r)
	}
	var p struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		return "", fmt.Errorf("decode problem: %v: %s", err, r.body)
	}
	if p.Status != status || p.Title == "" || p.Detail == "" {
		return "", fmt.Errorf("problem must carry status %d, a title and a detail, got %s", status, r.body)
	}
	return p.Detail, nil
}

func (s *state) requirePlan() error {
	if !s.planSet {
		return errors.New("no tool call router (plan) was set up in this scenario")
	}
	return nil
}

// route POSTs one call to /route and keeps the RouteResult.
func (s *state) route(payload any, meta map[string]any) error {
	if err := s.requirePlan(); err != nil {
		return err
	}
	body := map[string]any{"plan_id": s.planID, "tool_call": payload}
	if meta != nil {
		body["provider_metadata"] = meta
	}
	r, err := s.do(http.MethodPost, "/route", body, "application/json")
	if err != nil {
		return err
	}
	var res map[string]any
	if err := jsonOK(r, &res); err != nil {
		return fmt.Errorf("POST /route: %w", err)
	}
	if err := checkResult(res, s.planID); err != nil {
		return err
	}
	s.result = res
	return nil
}

// checkResult checks the invariants of every RouteResult.
func checkResult(res map[string]any, planID string) error {
	if got, _ := res["plan_id"].(string); got != planID {
		return fmt.Errorf("route result plan_id: want %q, got %v", planID, res["plan_id"])
	}
	if _, ok := res["success"].(bool); !ok {
		return fmt.Errorf("route result has no boolean success: %v", res)
	}
	if id, _ := res["tool_call_id"].(string); id == "" {
		return fmt.Errorf("route result has no tool_call_id: %v", res)
	}
	if _, ok := res["sequence"].(float64); !ok {
		return fmt.Errorf("route result has no numeric sequence: %v", res)
	}
	return nil
}

func openAICall(name, args string) map[string]any {
	return map[string]any{
		"id":       "call_" + strings.NewReplacer("/", "_", "-", "_").Replace(name),
		"type":     "function",
		"function": map[string]any{"name": name, "arguments": args},
	}
}

// ---------------------------------------------------------------------------
// Server-Sent Events

type sseEvent struct {
	name string
	data string
}

func parseSSE(body []byte) ([]sseEvent, error) {
	var (
		events []sseEvent
		cur    sseEvent
		data   []string
		seen   bool
	)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			if seen {
				cur.data = strings.Join(data, "\n")
				if cur.name == "" {
					cur.name = "message"
				}
				events = append(events, cur)
			}
			cur, data, seen = sseEvent{}, nil, false
		case strings.HasPrefix(line, ":"):
			// comment (heartbeat)
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				cur.name, seen = value, true
			case "data":
				data, seen = append(data, value), true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if seen {
		return nil, fmt.Errorf("stream ended inside an event (no blank line after it): %q", body)
	}
	return events, nil
}

// stream POSTs one call to /route as an event stream and keeps its updates
// and result.
func (s *state) stream(payload any) error {
	if err := s.requirePlan(); err != nil {
		return err
	}
	r, err := s.do(http.MethodPost, "/route", map[string]any{"plan_id": s.planID, "tool_call": payload}, "text/event-stream")
	if err != nil {
		return err
	}
	if r.status != http.StatusOK || r.ctype != "text/event-stream" {
		return fmt.Errorf("want HTTP 200 text/event-stream, got %s", r)
	}
	events, err := parseSSE(r.body)
	if err != nil {
		return err
	}
	s.events, s.updates, s.final = events, nil, nil
	for i, e := range events {
		switch e.name {
		case "update":
			var u map[string]any
			if err := json.Unmarshal([]byte(e.data), &u); err != nil {
				return fmt.Errorf("update event %d: %v: %s", i, err, e.data)
			}
			if s.final != nil {
				return fmt.Errorf("update event after the result event: %s", e.data)
			}
			s.updates = append(s.updates, u)
		case "result":
			if s.final != nil {
				return fmt.Errorf("second result event: %s", e.data)
			}
			var res map[string]any
			if err := json.Unmarshal([]byte(e.data), &res); err != nil {
				return fmt.Errorf("result event: %v: %s", err, e.data)
			}
			if err := checkResult(res, s.planID); err != nil {
				return err
			}
			s.final = res
		default:
			return fmt.Errorf("unexpected %q event in the stream: %s", e.name, e.data)
		}
	}
	return nil
}

func (s *state) hasUpdate(status string) error {
	if len(s.events) == 0 {
		return errors.New("no stream was received")
	}
	var got []string
	for _, u := range s.updates {
		st, _ := u["status"].(string)
		if st == status {
			return nil
		}
		got = append(got, st)
	}
	return fmt.Errorf("want an update with status %q, got statuses %q", status, got)
}

var statusRank = map[string]int{"pending": 0, "running": 1, "complete": 2, "error": 2}

// checkFinal checks that the stream ended with one result and that its
// updates came in the seed's order, all about the result's call.
func (s *state) checkFinal() error {
	if s.final == nil {
		return fmt.Errorf("the stream emitted no result event; events: %v", s.events)
	}
	id, _ := s.final["tool_call_id"].(string)
	last, terminal := -1, 0
	for _, u := range s.updates {
		st, _ := u["status"].(string)
		rank, ok := statusRank[st]
		if !ok {
			return fmt.Errorf("update with unknown status %q", st)
		}
		if rank < last {
			return fmt.Errorf("updates out of order: %v", s.updates)
		}
		last = rank
		if rank == 2 {
			terminal++
		}
		if got, _ := u["tool_call_id"].(string); got != id {
			return fmt.Errorf("update tool_call_id: want %q (the result's), got %q", id, got)
		}
	}
	if terminal != 1 {
		return fmt.Errorf("want exactly one complete/error update, got %d: %v", terminal, s.updates)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Schemas

func (s *state) exportSchemas(provider string, query string) error {
	path := "/schemas/" + url.PathEscape(provider)
	if query != "" {
		path += "?" + query
	}
	r, err := s.do(http.MethodGet, path, nil, "application/json")
	if err != nil {
		return err
	}
	var out struct {
		Provider string           `json:"provider"`
		Tools    []map[string]any `json:"tools"`
	}
	if err := jsonOK(r, &out); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if out.Provider != provider {
		return fmt.Errorf("GET %s: provider: want %q, got %q", path, provider, out.Provider)
	}
	if out.Tools == nil {
		return fmt.Errorf("GET %s: no tools list: %s", path, r.body)
	}
	s.exported = out.Tools
	return nil
}

func (s *state) validationItem() (map[string]any, error) {
	if s.exported == nil {
		return nil, errors.New("no schemas were exported")
	}
	for _, t := range s.exported {
		if t["tool_type"] == "validation" {
			return t, nil
		}
	}
	return nil, fmt.Errorf("no exported tool has tool_type validation: %v", s.exported)
}

// defBody is the part of a definition holding name, description and the
// schema: OpenAI nests it under "function".
func defBody(f toolrouter.Format, def map[string]any) (map[string]any, error) {
	if f != toolrouter.FormatOpenAI {
		return def, nil
	}
	if def["type"] != "function" {
		return nil, fmt.Errorf("OpenAI definition: want type function, got %v", def)
	}
	fn, ok := def["function"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("OpenAI definition has no function object: %v", def)
	}
	return fn, nil
}

// schemaBodies returns the direct and the HTTP definition bodies of the
// scenario's tool spec.
func (s *state) schemaBodies() (direct, served map[string]any, err error) {
	if s.schemaDef == nil || s.schemaItem == nil {
		return nil, nil, errors.New("no schema was normalized")
	}
	if direct, err = defBody(s.schemaFormat, s.schemaDef); err != nil {
		return nil, nil, fmt.Errorf("format.Definition: %w", err)
	}
	def, ok := s.schemaItem["definition"].(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("/schemas item has no definition: %v", s.schemaItem)
	}
	if served, err = defBody(s.schemaFormat, def); err != nil {
		return nil, nil, fmt.Errorf("GET /schemas/%s: %w", s.schemaFormat, err)
	}
	return direct, served, nil
}

func (s *state) normalizeSchema(provider string, maxLen int) error {
	if s.spec == nil {
		return errors.New("no tool spec in this scenario")
	}
	f, ok := format.ParseFormat(provider)
	if !ok {
		return fmt.Errorf("format.ParseFormat(%q) does not know the provider", provider)
	}
	s.schemaFormat = f
	s.schemaDef = format.Definition(f, s.spec, maxLen)
	if s.schemaDef == nil {
		return fmt.Errorf("format.Definition(%q) returned nil", provider)
	}
	query := ""
	if maxLen > 0 {
		query = "max_description_length=" + strconv.Itoa(maxLen)
	}
	if err := s.exportSchemas(provider, query); err != nil {
		return err
	}
	s.schemaItem = nil
	for _, t := range s.exported {
		if t["name"] == s.spec.Name {
			s.schemaItem = t
		}
	}
	if s.schemaItem == nil {
		return fmt.Errorf("GET /schemas/%s lists no tool named %q: %v", provider, s.spec.Name, s.exported)
	}
	return nil
}

var strictName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ---------------------------------------------------------------------------
// Helpers

func parseJSON(text string) (any, error) {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("bad JSON in the step %q: %w", text, err)
	}
	return v, nil
}

func parseObject(text string) (map[string]any, error) {
	v, err := parseJSON(text)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object in the step, got %q", text)
	}
	return m, nil
}

func (s *state) needResult() (map[string]any, error) {
	if s.result == nil {
		return nil, errors.New("no tool call was routed")
	}
	return s.result, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

var categories = map[string]bool{
	"timeout": true, "permission": true, "not_found": true, "resource": true,
	"schema": true, "parse": true, "execution": true, "unknown": true,
}

func wantString(what string, got any, want string) error {
	if s, ok := got.(string); !ok || s != want {
		return fmt.Errorf("%s: want %q, got %#v", what, want, got)
	}
	return nil
}

func resultSuccess(res map[string]any, want bool) error {
	ok, isBool := res["success"].(bool)
	if !isBool || ok != want {
		return fmt.Errorf("success: want %v, got %#v (error %#v, category %#v)", want, res["success"], res["error"], res["error_category"])
	}
	if !want && str(res["error"]) == "" {
		return fmt.Errorf("a failed result must carry an error message, got %#v", res["error"])
	}
	if want && res["error"] != nil {
		return fmt.Errorf("a successful result must have error null, got %#v", res["error"])
	}
	return nil
}

// ---------------------------------------------------------------------------
// Steps

func initializeScenario(sc *godog.ScenarioContext) {
	initializeScenarioWith(sc, runtimeProvider)
}

// initializeScenarioWith registers every step; runtime.feature's fake LLM
// provider is the one provider returns.
func initializeScenarioWith(sc *godog.ScenarioContext, provider func() (llmtest.Provider, error)) {
	initRuntimeSteps(sc, provider)
	initClientSteps(sc)
	initIsolationSteps(sc)
	initMessageSteps(sc)
	sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
		return context.WithValue(ctx, stateKey{}, &state{roles: map[string]string{}}), nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
		if s, ok := ctx.Value(stateKey{}).(*state); ok {
			s.close()
		}
		return ctx, nil
	})

	// ---- payloads ----
	sc.Step(`^a tool call payload with name "([^"]*)" and arguments '(.*)'$`, func(ctx context.Context, name, args string) error {
		getState(ctx).payload = map[string]any{"name": name, "arguments": args}
		return nil
	})
	sc.Step(`^a tool call payload with name "([^"]*)" and input (\{.*\})$`, func(ctx context.Context, name, input string) error {
		in, err := parseObject(input)
		if err != nil {
			return err
		}
		getState(ctx).payload = map[string]any{"name": name, "input": in}
		return nil
	})
	sc.Step(`^a tool call payload with name "([^"]*)" and type "([^"]*)" and args (\{.*\})$`, func(ctx context.Context, name, typ, args string) error {
		a, err := parseObject(args)
		if err != nil {
			return err
		}
		getState(ctx).payload = map[string]any{"name": name, "type": typ, "args": a}
		return nil
	})
	sc.Step(`^a tool call payload with name "([^"]*)" and args key only$`, func(ctx context.Context, name string) error {
		getState(ctx).payload = map[string]any{"name": name, "args": map[string]any{}}
		return nil
	})
	sc.Step(`^an empty tool call payload$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{}
		return nil
	})
	sc.Step(`^a tool call payload with name "([^"]*)" and dict arguments (\{.*\})$`, func(ctx context.Context, name, args string) error {
		a, err := parseObject(args)
		if err != nil {
			return err
		}
		getState(ctx).payload = map[string]any{"name": name, "arguments": a}
		return nil
	})
	sc.Step(`^a tool call payload with name "([^"]*)" and dict arguments$`, func(ctx context.Context, name string) error {
		getState(ctx).payload = map[string]any{"name": name, "arguments": map[string]any{"msg": "hello"}}
		return nil
	})
	sc.Step(`^a tool call payload with name "([^"]*)" and parameters key (\{.*\})$`, func(ctx context.Context, name, params string) error {
		p, err := parseObject(params)
		if err != nil {
			return err
		}
		getState(ctx).payload = map[string]any{"name": name, "parameters": p}
		return nil
	})
	sc.Step(`^a tool call with invalid JSON arguments$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{"name": "test/echo", "arguments": `{"key": "value"`}
		return nil
	})
	sc.Step(`^a tool call payload without a name$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{"id": "call_noname", "arguments": `{"msg": "hi"}`}
		return nil
	})
	sc.Step(`^a LangChain payload with dict args$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{"name": "test/echo", "args": map[string]any{"msg": "hi"}, "id": "lc_1", "type": "tool_call"}
		return nil
	})
	sc.Step(`^a LangChain payload with list args$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{"name": "test/echo", "args": []any{"msg", "hi"}, "id": "lc_1", "type": "tool_call"}
		return nil
	})
	sc.Step(`^an unknown format payload with parameters key$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{"name": "search/web", "parameters": map[string]any{"query": "go"}}
		return nil
	})
	sc.Step(`^an unknown format payload with JSON string in args key$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{"name": "data/load", "args": `{"data": [1, 2, 3]}`}
		return nil
	})
	sc.Step(`^an unknown format payload with bad JSON and valid fallback$`, func(ctx context.Context) error {
		getState(ctx).payload = map[string]any{"name": "data/load", "args": `{not json`, "input": map[string]any{"ok": true}}
		return nil
	})

	// ---- detection ----
	sc.Step(`^I detect the provider format$`, func(ctx context.Context) error {
		s := getState(ctx)
		if s.payload == nil {
			return errors.New("no payload in this scenario")
		}
		s.detected = format.Detect(s.payload)
		return nil
	})
	sc.Step(`^I detect format for a non-dict value$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.detected = toolrouter.FormatUnknown
		for _, v := range []any{"not a dict", []any{map[string]any{"name": "test/echo", "arguments": "{}"}}, 42.0, true, nil} {
			if f := format.Detect(v); f != toolrouter.FormatUnknown {
				s.detected = f
				return nil
			}
		}
		return nil
	})
	sc.Step(`^the detected format should be "([^"]*)"$`, func(ctx context.Context, want string) error {
		if got := getState(ctx).detected; string(got) != want {
			return fmt.Errorf("detected format: want %q, got %q", want, got)
		}
		return nil
	})

	// ---- normalization ----
	sc.Step(`^I normalize the tool call$`, func(ctx context.Context) error {
		s := getState(ctx)
		c, err := format.Normalize(s.payload)
		if err != nil {
			return fmt.Errorf("format.Normalize(%v): %w", s.payload, err)
		}
		s.call, s.normDone = c, true
		return nil
	})
	sc.Step(`^I normalize the tool call for "([^"]*)" format$`, func(ctx context.Context, name string) error {
		s := getState(ctx)
		f, ok := format.ParseFormat(name)
		if !ok {
			return fmt.Errorf("format.ParseFormat(%q) does not know the format", name)
		}
		c, err := format.NormalizeAs(s.payload, f)
		if err != nil {
			return fmt.Errorf("format.NormalizeAs(%v, %q): %w", s.payload, f, err)
		}
		s.call, s.normDone = c, true
		return nil
	})
	sc.Step(`^I try to normalize the tool call$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.errs = nil
		if _, err := format.Normalize(s.payload); err != nil {
			s.errs = append(s.errs, err.Error())
		}
		return nil
	})
	sc.Step(`^I try to normalize a non-dict payload$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.errs = nil
		for _, v := range []any{"not a dict", []any{"test/echo"}} {
			_, err := format.Normalize(v)
			if err == nil {
				return fmt.Errorf("format.Normalize(%#v) returned no error", v)
			}
			s.errs = append(s.errs, err.Error())
		}
		return nil
	})
	sc.Step(`^I try to normalize the invalid langchain args$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.errs = nil
		if _, err := format.NormalizeAs(s.payload, toolrouter.FormatLangChain); err != nil {
			s.errs = append(s.errs, err.Error())
		}
		return nil
	})
	callStep := func(ctx context.Context) (*toolrouter.Call, error) {
		s := getState(ctx)
		if !s.normDone {
			return nil, errors.New("no tool call was normalized")
		}
		return &s.call, nil
	}
	toolNameStep := func(ctx context.Context, want string) error {
		c, err := callStep(ctx)
		if err != nil {
			return err
		}
		if c.ToolName != want {
			return fmt.Errorf("normalized tool_name: want %q, got %q", want, c.ToolName)
		}
		return nil
	}
	argKeyStep := func(ctx context.Context, key string) error {
		c, err := callStep(ctx)
		if err != nil {
			return err
		}
		if c.Arguments == nil {
			return errors.New("normalized arguments are nil, want an object")
		}
		if _, ok := c.Arguments[key]; !ok {
			return fmt.Errorf("normalized arguments: want key %q, got %v", key, c.Arguments)
		}
		return nil
	}
	sc.Step(`^the normalized request tool_name should be "([^"]*)"$`, toolNameStep)
	sc.Step(`^the normalized request should have tool name "([^"]*)"$`, toolNameStep)
	sc.Step(`^the normalized request arguments should have key "([^"]*)"$`, argKeyStep)
	sc.Step(`^the normalized arguments should have key "([^"]*)"$`, argKeyStep)
	sc.Step(`^the normalized arguments should be a dict with key "([^"]*)"$`, argKeyStep)
	sc.Step(`^the normalized request provider_format should be "([^"]*)"$`, func(ctx context.Context, want string) error {
		c, err := callStep(ctx)
		if err != nil {
			return err
		}
		if string(c.Format) != want {
			return fmt.Errorf("normalized provider_format: want %q, got %q", want, c.Format)
		}
		return nil
	})

	// ---- errors ----
	sc.Step(`^a router ValueError should be raised containing "([^"]*)"$`, func(ctx context.Context, want string) error {
		s := getState(ctx)
		if len(s.errs) == 0 {
			return fmt.Errorf("want an error containing %q, but none was raised", want)
		}
		for _, e := range s.errs {
			if !strings.Contains(e, want) {
				return fmt.Errorf("want an error containing %q, got %q", want, e)
			}
		}
		return nil
	})

	// ---- ids ----
	sc.Step(`^I generate (?:a|another) tool call ID for plan "([^"]*)" sequence (-?\d+)$`, func(ctx context.Context, plan string, seq int64) error {
		s := getState(ctx)
		id, err := toolrouter.ToolCallID(plan, seq)
		if err != nil {
			return fmt.Errorf("toolrouter.ToolCallID(%q, %d): %w", plan, seq, err)
		}
		s.ids = append(s.ids, id)
		return nil
	})
	sc.Step(`^the tool call ID should start with "([^"]*)"$`, func(ctx context.Context, prefix string) error {
		s := getState(ctx)
		if len(s.ids) == 0 {
			return errors.New("no tool call ID was generated")
		}
		if id := s.ids[len(s.ids)-1]; !strings.HasPrefix(id, prefix) {
			return fmt.Errorf("tool call ID: want prefix %q, got %q", prefix, id)
		}
		return nil
	})
	sc.Step(`^the tool call ID should have length (\d+)$`, func(ctx context.Context, n int) error {
		s := getState(ctx)
		if len(s.ids) == 0 {
			return errors.New("no tool call ID was generated")
		}
		if id := s.ids[len(s.ids)-1]; len(id) != n {
			return fmt.Errorf("tool call ID length: want %d, got %d (%q)", n, len(id), id)
		}
		return nil
	})
	sc.Step(`^both tool call IDs should be identical$`, func(ctx context.Context) error {
		s := getState(ctx)
		if len(s.ids) != 2 {
			return fmt.Errorf("want 2 generated IDs, got %d", len(s.ids))
		}
		if s.ids[0] != s.ids[1] {
			return fmt.Errorf("want identical IDs, got %q and %q", s.ids[0], s.ids[1])
		}
		return nil
	})
	sc.Step(`^the tool call IDs should differ$`, func(ctx context.Context) error {
		s := getState(ctx)
		if len(s.ids) != 2 {
			return fmt.Errorf("want 2 generated IDs, got %d", len(s.ids))
		}
		if s.ids[0] == s.ids[1] {
			return fmt.Errorf("want different IDs, both are %q", s.ids[0])
		}
		return nil
	})
	sc.Step(`^I try to generate a tool call ID with empty plan_id$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.errs = nil
		if id, err := toolrouter.ToolCallID("", 0); err != nil {
			s.errs = append(s.errs, err.Error())
		} else {
			return fmt.Errorf("toolrouter.ToolCallID(\"\", 0) returned %q and no error", id)
		}
		return nil
	})
	sc.Step(`^I try to generate a tool call ID with negative sequence$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.errs = nil
		if id, err := toolrouter.ToolCallID("plan-001", -1); err != nil {
			s.errs = append(s.errs, err.Error())
		} else {
			return fmt.Errorf("toolrouter.ToolCallID(\"plan-001\", -1) returned %q and no error", id)
		}
		return nil
	})

	// ---- classification ----
	sc.Step(`^I classify the error "([^"]*)"$`, func(ctx context.Context, msg string) error {
		s := getState(ctx)
		s.category, s.classDone = toolrouter.ClassifyError(msg), true
		return nil
	})
	sc.Step(`^I classify an empty error message$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.category, s.classDone = toolrouter.ClassifyError(""), true
		return nil
	})
	sc.Step(`^the error category should be "([^"]*)"$`, func(ctx context.Context, want string) error {
		s := getState(ctx)
		if !s.classDone {
			return errors.New("no error was classified")
		}
		if string(s.category) != want {
			return fmt.Errorf("error category: want %q, got %q", want, s.category)
		}
		return nil
	})

	// ---- registries ----
	registryWith := func(e toolEntry, role string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s := getState(ctx)
			s.addTool(e)
			if role != "" {
				s.roles[role] = e.name
			}
			return s.service()
		}
	}
	sc.Step(`^a tool registry with an echo tool "([^"]*)"$`, func(ctx context.Context, name string) error {
		return registryWith(toolEntry{name: name, description: "Echo tool", path: "/echo", kind: toolrouter.KindTool}, "echo")(ctx)
	})
	sc.Step(`^a tool registry with a failing tool "([^"]*)"$`, func(ctx context.Context, name string) error {
		return registryWith(toolEntry{name: name, description: "Always fails", path: "/fail", kind: toolrouter.KindTool}, "fail")(ctx)
	})
	sc.Step(`^a tool registry with a passing validation tool "([^"]*)"$`, func(ctx context.Context, name string) error {
		return registryWith(toolEntry{name: name, description: "Always passes", path: "/validate/pass", kind: toolrouter.KindValidation}, "validation")(ctx)
	})
	sc.Step(`^a tool registry with a failing validation tool "([^"]*)"$`, func(ctx context.Context, name string) error {
		return registryWith(toolEntry{name: name, description: "Always fails validation", path: "/validate/fail", kind: toolrouter.KindValidation}, "validation")(ctx)
	})
	sc.Step(`^a tool registry with a tool that raises RuntimeError$`,
		registryWith(toolEntry{name: "test/raises", description: "Crashes with RuntimeError: boom", path: "/crash", kind: toolrouter.KindTool}, "error"))
	sc.Step(`^a tool registry with a tool that returns failed result$`,
		registryWith(toolEntry{name: "test/failed-result", description: "Returns a failed result", path: "/fail", kind: toolrouter.KindTool}, "fail"))
	sc.Step(`^a tool registry with a validation tool$`,
		registryWith(toolEntry{name: "test/validator", description: "Validation tool", path: "/validate/pass", kind: toolrouter.KindValidation}, "validation"))
	sc.Step(`^a tool registry with a validation tool with mode "([^"]*)"$`, func(ctx context.Context, mode string) error {
		return registryWith(toolEntry{name: "test/validator", description: "Validation tool", path: "/validate/pass",
			kind: toolrouter.KindValidation, outputSchema: "{mode: " + strconv.Quote(mode) + "}"}, "validation")(ctx)
	})
	sc.Step(`^a tool registry with a validation tool with numeric mode$`,
		registryWith(toolEntry{name: "test/validator", description: "Validation tool", path: "/validate/pass",
			kind: toolrouter.KindValidation, outputSchema: "{mode: 3}"}, "validation"))

	// ---- router ----
	sc.Step(`^a tool call router for plan "([^"]*)"$`, func(ctx context.Context, plan string) error {
		s := getState(ctx)
		s.planID, s.planSet = plan, true
		r, err := s.do(http.MethodGet, "/readyz", nil, "")
		if err != nil {
			return err
		}
		if r.status != http.StatusOK {
			return fmt.Errorf("GET /readyz: want 200, got %s", r)
		}
		return nil
	})
	sc.Step(`^the router plan_id should be "([^"]*)"$`, func(ctx context.Context, want string) error {
		s := getState(ctx)
		if err := s.route(openAICall(s.roles["echo"], "{}"), nil); err != nil {
			return err
		}
		return wantString("route result plan_id", s.result["plan_id"], want)
	})
	sc.Step(`^the router sequence should be (\d+)$`, func(ctx context.Context, want int) error {
		s := getState(ctx)
		res, err := s.needResult()
		if err != nil {
			return err
		}
		seq, _ := res["sequence"].(float64)
		if got := int(seq) + 1; got != want {
			return fmt.Errorf("router sequence: want %d calls routed, got %d (last result's sequence %v)", want, got, res["sequence"])
		}
		wantID, _ := toolrouter.ToolCallID(s.planID, int64(seq))
		return wantString("tool_call_id of sequence "+strconv.Itoa(int(seq)), res["tool_call_id"], wantID)
	})
	sc.Step(`^I try to create a router with empty plan_id$`, func(ctx context.Context) error {
		s := getState(ctx)
		s.errs = nil
		r, err := s.do(http.MethodPost, "/route", map[string]any{"plan_id": "", "tool_call": openAICall("test/echo", "{}")}, "application/json")
		if err != nil {
			return err
		}
		detail, err := problemDetail(r, http.StatusBadRequest)
		if err != nil {
			return fmt.Errorf("POST /route with an empty plan_id: %w", err)
		}
		s.errs = append(s.errs, detail)
		return nil
	})
	sc.Step(`^I try to route a non-dict payload$`, func(ctx context.Context) error {
		s := getState(ctx)
		if err := s.requirePlan(); err != nil {
			return err
		}
		s.errs = nil
		r, err := s.do(http.MethodPost, "/route", map[string]any{"plan_id": s.planID, "tool_call": "test/echo"}, "application/json")
		if err != nil {
			return err
		}
		detail, err := problemDetail(r, http.StatusBadRequest)
		if err != nil {
			return fmt.Errorf("POST /route with a string tool_call: %w", err)
		}
		s.errs = append(s.errs, detail)
		return nil
	})
	sc.Step(`^I try to route_batch a non-list payload$`, func(ctx context.Context) error {
		s := getState(ctx)
		if err := s.requirePlan(); err != nil {
			return err
		}
		s.errs = nil
		r, err := s.do(http.MethodPost, "/route/batch", map[string]any{"plan_id": s.planID, "tool_calls": openAICall("test/echo", "{}")}, "application/json")
		if err != nil {
			return err
		}
		detail, err := problemDetail(r, http.StatusBadRequest)
		if err != nil {
			return fmt.Errorf("POST /route/batch with an object tool_calls: %w", err)
		}
		s.errs = append(s.errs, detail)
		return nil
	})
	sc.Step(`^I try to stream-route a non-dict payload$`, func(ctx context.Context) error {
		s := getState(ctx)
		if err := s.requirePlan(); err != nil {
			return err
		}
		s.errs = nil
		r, err := s.do(http.MethodPost, "/route", map[string]any{"plan_id": s.planID, "tool_call": []any{"test/echo"}}, "text/event-stream")
		if err != nil {
			return err
		}
		detail, err := problemDetail(r, http.StatusBadRequest)
		if err != nil {
			return fmt.Errorf("streaming POST /route with a list tool_call: %w", err)
		}
		s.errs = append(s.errs, detail)
		return nil
	})

	// ---- routing ----
	sc.Step(`^an OpenAI-format tool call for "([^"]*)" with arguments '(.*)'$`, func(ctx context.Context, name, args string) error {
		getState(ctx).payload = openAICall(name, args)
		return nil
	})
	sc.Step(`^an Anthropic-format tool call for "([^"]*)" with input (\{.*\})$`, func(ctx context.Context, name, input string) error {
		in, err := parseObject(input)
		if err != nil {
			return err
		}
		getState(ctx).payload = map[string]any{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": name, "input": in}
		return nil
	})
	sc.Step(`^a LangChain-format tool call for "([^"]*)" with args (\{.*\})$`, func(ctx context.Context, name, args string) error {
		a, err := parseObject(args)
		if err != nil {
			return err
		}
		getState(ctx).payload = map[string]any{"type": "tool_call", "id": "lc_call_1", "name": name, "args": a}
		return nil
	})
	sc.Step(`^provider metadata with model "([^"]*)" and provider_id "([^"]*)"$`, func(ctx context.Context, model, provider string) error {
		getState(ctx).meta = map[string]any{"model": model, "provider_id": provider}
		return nil
	})
	sc.Step(`^I route the tool call$`, func(ctx context.Context) error {
		s := getState(ctx)
		if s.payload == nil {
			return errors.New("no tool call payload in this scenario")
		}
		return s.route(s.payload, nil)
	})
	sc.Step(`^I route the tool call with provider metadata$`, func(ctx context.Context) error {
		s := getState(ctx)
		if s.payload == nil || s.meta == nil {
			return errors.New("want a tool call payload and provider metadata")
		}
		return s.route(s.payload, s.meta)
	})
	roleCall := func(role string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s := getState(ctx)
			name, ok := s.roles[role]
			if !ok {
				return fmt.Errorf("the registry has no %s tool", role)
			}
			return s.route(openAICall(name, "{}"), nil)
		}
	}
	sc.Step(`^I route an OpenAI payload for the error tool$`, roleCall("error"))
	sc.Step(`^I route an OpenAI payload for the fail tool$`, roleCall("fail"))
	sc.Step(`^I route an OpenAI payload for the validation tool$`, roleCall("validation"))

	sc.Step(`^the normalized result should be successful$`, func(ctx context.Context) error {
		res, err := getState(ctx).needResult()
		if err != nil {
			return err
		}
		if err := resultSuccess(res, true); err != nil {
			return err
		}
		if res["output"] == nil {
			return fmt.Errorf("a successful result must carry the tool's output, got %v", res)
		}
		return nil
	})
	sc.Step(`^the normalized result should not be successful$`, func(ctx context.Context) error {
		res, err := getState(ctx).needResult()
		if err != nil {
			return err
		}
		return resultSuccess(res, false)
	})
	sc.Step(`^the route result should have success (true|false)$`, func(ctx context.Context, want string) error {
		res, err := getState(ctx).needResult()
		if err != nil {
			return err
		}
		return resultSuccess(res, want == "true")
	})
	resultField := func(field string) func(ctx context.Context, want string) error {
		return func(ctx context.Context, want string) error {
			res, err := getState(ctx).needResult()
			if err != nil {
				return err
			}
			return wantString("route result "+field, res[field], want)
		}
	}
	sc.Step(`^the normalized result tool_name should be "([^"]*)"$`, resultField("tool_name"))
	sc.Step(`^the normalized result provider_format should be "([^"]*)"$`, resultField("provider_format"))
	sc.Step(`^the normalized result error_category should be "([^"]*)"$`, resultField("error_category"))
	sc.Step(`^the normalized result tool_call_id should start with "([^"]*)"$`, func(ctx context.Context, prefix string) error {
		s := getState(ctx)
		res, err := s.needResult()
		if err != nil {
			return err
		}
		id := str(res["tool_call_id"])
		if !strings.HasPrefix(id, prefix) {
			return fmt.Errorf("tool_call_id: want prefix %q, got %q", prefix, id)
		}
		seq, _ := res["sequence"].(float64)
		want, _ := toolrouter.ToolCallID(s.planID, int64(seq))
		if id != want {
			return fmt.Errorf("tool_call_id of plan %q sequence %v: want %q, got %q", s.planID, seq, want, id)
		}
		return nil
	})
	sc.Step(`^the normalized result provider_metadata should contain key "([^"]*)"$`, func(ctx context.Context, key string) error {
		s := getState(ctx)
		res, err := s.needResult()
		if err != nil {
			return err
		}
		md, ok := res["provider_metadata"].(map[string]any)
		if !ok {
			return fmt.Errorf("provider_metadata: want an object, got %#v", res["provider_metadata"])
		}
		got, ok := md[key]
		if !ok {
			return fmt.Errorf("provider_metadata: want key %q, got %v", key, md)
		}
		if want := s.meta[key]; got != want {
			return fmt.Errorf("provider_metadata[%q]: want %#v, got %#v", key, want, got)
		}
		return nil
	})
	sc.Step(`^the route result error should contain "([^"]*)"$`, func(ctx context.Context, want string) error {
		res, err := getState(ctx).needResult()
		if err != nil {
			return err
		}
		if e := str(res["error"]); !strings.Contains(e, want) {
			return fmt.Errorf("route result error: want it to contain %q, got %#v", want, res["error"])
		}
		return nil
	})
	sc.Step(`^the route result should have error_category set$`, func(ctx context.Context) error {
		res, err := getState(ctx).needResult()
		if err != nil {
			return err
		}
		if c := str(res["error_category"]); !categories[c] {
			return fmt.Errorf("error_category: want one of the eight categories, got %#v", res["error_category"])
		}
		return nil
	})
	isValidation := func(get func(*state) (map[string]any, error)) func(ctx context.Context, want string) error {
		return func(ctx context.Context, want string) error {
			res, err := get(getState(ctx))
			if err != nil {
				return err
			}
			w := strings.EqualFold(want, "true")
			if got, ok := res["is_validation"].(bool); !ok || got != w {
				return fmt.Errorf("is_validation: want %v, got %#v", w, res["is_validation"])
			}
			return nil
		}
	}
	validationPassed := func(ctx context.Context, want string) error {
		res, err := getState(ctx).needResult()
		if err != nil {
			return err
		}
		w := strings.EqualFold(want, "true")
		if got, ok := res["validation_passed"].(bool); !ok || got != w {
			return fmt.Errorf("validation_passed: want %v, got %#v (output %v)", w, res["validation_passed"], res["output"])
		}
		return nil
	}
	needResult := func(s *state) (map[string]any, error) { return s.needResult() }
	needFinal := func(s *state) (map[string]any, error) {
		if s.final == nil {
			return nil, errors.New("no streamed result")
		}
		return s.final, nil
	}
	sc.Step(`^the normalized result is_validation should be (True|False)$`, isValidation(needResult))
	sc.Step(`^the route result should have is_validation (true|false)$`, isValidation(needResult))
	sc.Step(`^the normalized result validation_passed should be (True|False)$`, validationPassed)
	sc.Step(`^the route result should have validation_passed (true|false)$`, validationPassed)

	// ---- batch ----
	sc.Step(`^a batch of (\d+) OpenAI-format tool calls for "([^"]*)"$`, func(ctx context.Context, n int, name string) error {
		s := getState(ctx)
		s.batch = make([]any, n)
		for i := range n {
			s.batch[i] = map[string]any{
				"id":       fmt.Sprintf("call_batch_%d", i),
				"type":     "function",
				"function": map[string]any{"name": name, "arguments": fmt.Sprintf(`{"msg": "batch %d"}`, i)},
			}
		}
		return nil
	})
	routeBatch := func(s *state, calls []any) error {
		if err := s.requirePlan(); err != nil {
			return err
		}
		r, err := s.do(http.MethodPost, "/route/batch", map[string]any{"plan_id": s.planID, "tool_calls": calls}, "application/json")
		if err != nil {
			return err
		}
		var out struct {
			Results []map[string]any `json:"results"`
		}
		if err := jsonOK(r, &out); err != nil {
			return fmt.Errorf("POST /route/batch: %w", err)
		}
		if out.Results == nil {
			return fmt.Errorf("POST /route/batch: want a results list, got %s", r.body)
		}
		for _, res := range out.Results {
			if err := checkResult(res, s.planID); err != nil {
				return err
			}
		}
		s.results = out.Results
		return nil
	}
	sc.Step(`^I route the batch$`, func(ctx context.Context) error {
		s := getState(ctx)
		if s.batch == nil {
			return errors.New("no batch in this scenario")
		}
		return routeBatch(s, s.batch)
	})
	sc.Step(`^I route an empty batch$`, func(ctx context.Context) error {
		return routeBatch(getState(ctx), []any{})
	})
	sc.Step(`^the batch should return (\d+) results$`, func(ctx context.Context, n int) error {
		s := getState(ctx)
		if s.results == nil {
			return errors.New("no batch was routed")
		}
		if len(s.results) != n {
			return fmt.Errorf("batch results: want %d, got %d", n, len(s.results))
		}
		return nil
	})
	sc.Step(`^all batch results should be successful$`, func(ctx context.Context) error {
		s := getState(ctx)
		if len(s.results) == 0 {
			return errors.New("no batch results")
		}
		seen := map[string]bool{}
		for i, res := range s.results {
			if err := resultSuccess(res, true); err != nil {
				return fmt.Errorf("batch result %d: %w", i, err)
			}
			// results come back in input order
			if want := fmt.Sprintf("call_batch_%d", i); str(res["provider_call_id"]) != want {
				return fmt.Errorf("batch result %d: provider_call_id: want %q (input order), got %#v", i, want, res["provider_call_id"])
			}
			id := str(res["tool_call_id"])
			if seen[id] {
				return fmt.Errorf("batch result %d: tool_call_id %q reused", i, id)
			}
			seen[id] = true
		}
		return nil
	})

	// ---- streaming ----
	sc.Step(`^I route the tool call with streaming$`, func(ctx context.Context) error {
		s := getState(ctx)
		if s.payload == nil {
			return errors.New("no tool call payload in this scenario")
		}
		return s.stream(s.payload)
	})
	streamRole := func(role string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s := getState(ctx)
			name, ok := s.roles[role]
			if !ok {
				return fmt.Errorf("the registry has no %s tool", role)
			}
			return s.stream(openAICall(name, "{}"))
		}
	}
	sc.Step(`^I stream-route an OpenAI payload for the error tool$`, streamRole("error"))
	sc.Step(`^I stream-route an OpenAI payload for the validation tool$`, streamRole("validation"))
	sc.Step(`^the stream should emit a (pending|running|complete) update$`, func(ctx context.Context, status string) error {
		return getState(ctx).hasUpdate(status)
	})
	sc.Step(`^the streaming updates should include ERROR status$`, func(ctx context.Context) error {
		return getState(ctx).hasUpdate("error")
	})
	sc.Step(`^the stream should emit a final result$`, func(ctx context.Context) error {
		return getState(ctx).checkFinal()
	})
	streamFailed := func(ctx context.Context) error {
		s := getState(ctx)
		if err := s.checkFinal(); err != nil {
			return err
		}
		return resultSuccess(s.final, false)
	}
	sc.Step(`^the stream should emit a final result that is not successful$`, streamFailed)
	sc.Step(`^the streaming final result should have success false$`, streamFailed)
	sc.Step(`^the streaming final result should have is_validation (true|false)$`, func(ctx context.Context, want string) error {
		s := getState(ctx)
		if err := s.checkFinal(); err != nil {
			return err
		}
		return isValidation(needFinal)(ctx, want)
	})

	// ---- schemas ----
	specStep := func(ctx context.Context, name, desc string) error {
		s := getState(ctx)
		s.spec = &toolrouter.Tool{Name: name, Description: desc, Kind: toolrouter.KindTool, InputSchema: specInputSchema()}
		s.addTool(toolEntry{name: name, description: desc, path: "/echo", kind: toolrouter.KindTool})
		s.roles["echo"] = name
		return nil
	}
	sc.Step(`^a tool spec named "([^"]*)" with description "([^"]*)"$`, specStep)
	sc.Step(`^a tool spec named "([^"]*)" with a very long description$`, func(ctx context.Context, name string) error {
		return specStep(ctx, name, strings.Repeat("Echoes its arguments back unchanged. ", 20))
	})
	sc.Step(`^a tool spec named "([^"]*)"$`, func(ctx context.Context, name string) error {
		return specStep(ctx, name, "")
	})
	sc.Step(`^I normalize the schema for "([^"]*)" provider$`, func(ctx context.Context, provider string) error {
		return getState(ctx).normalizeSchema(provider, 0)
	})
	sc.Step(`^I normalize the schema for "([^"]*)" provider with max length (\d+)$`, func(ctx context.Context, provider string, n int) error {
		return getState(ctx).normalizeSchema(provider, n)
	})
	schemaKey := func(ctx context.Context, key string) error {
		direct, served, err := getState(ctx).schemaBodies()
		if err != nil {
			return err
		}
		if _, ok := direct[key]; !ok {
			return fmt.Errorf("format.Definition: want key %q, got %v", key, direct)
		}
		if _, ok := served[key]; !ok {
			return fmt.Errorf("GET /schemas definition: want key %q, got %v", key, served)
		}
		return nil
	}
	sc.Step(`^the normalized schema should have key "([^"]*)"$`, schemaKey)
	sc.Step(`^the schema should have key "([^"]*)"$`, schemaKey)
	sc.Step(`^the normalized schema should have name "([^"]*)"$`, func(ctx context.Context, want string) error {
		s := getState(ctx)
		direct, served, err := s.schemaBodies()
		if err != nil {
			return err
		}
		if err := wantString("/schemas item name", s.schemaItem["name"], want); err != nil {
			return err
		}
		exported := str(direct["name"])
		if exported == "" {
			return fmt.Errorf("format.Definition has no name: %v", direct)
		}
		if got := str(served["name"]); got != exported {
			return fmt.Errorf("exported name: format.Definition says %q, GET /schemas says %q", exported, got)
		}
		if s.schemaFormat == toolrouter.FormatOpenAI || s.schemaFormat == toolrouter.FormatAnthropic {
			if !strictName.MatchString(exported) {
				return fmt.Errorf("exported name %q does not match the provider's ^[a-zA-Z0-9_-]{1,64}$", exported)
			}
		}
		// A call that comes back under the exported name routes to the tool.
		s.planID, s.planSet = "plan-schema-alias", true
		if err := s.route(openAICall(exported, `{"msg": "alias"}`), nil); err != nil {
			return err
		}
		if err := resultSuccess(s.result, true); err != nil {
			return fmt.Errorf("routing under the exported name %q: %w", exported, err)
		}
		return wantString(fmt.Sprintf("tool_name of a call under the exported name %q", exported), s.result["tool_name"], want)
	})
	sc.Step(`^the normalized schema description should be at most (\d+) characters$`, func(ctx context.Context, n int) error {
		direct, served, err := getState(ctx).schemaBodies()
		if err != nil {
			return err
		}
		for src, body := range map[string]map[string]any{"format.Definition": direct, "GET /schemas": served} {
			d, ok := body["description"].(string)
			if !ok || d == "" {
				return fmt.Errorf("%s: want a non-empty description, got %#v", src, body["description"])
			}
			if l := utf8.RuneCountInString(d); l > n {
				return fmt.Errorf("%s: description: want at most %d characters, got %d (%q)", src, n, l, d)
			}
		}
		return nil
	})
	sc.Step(`^I try to normalize the schema with max_description_length (-?\d+)$`, func(ctx context.Context, n int) error {
		s := getState(ctx)
		s.errs = nil
		if err := format.CheckMaxDescription(n); err != nil {
			s.errs = append(s.errs, err.Error())
		} else {
			return fmt.Errorf("format.CheckMaxDescription(%d) returned no error", n)
		}
		r, err := s.do(http.MethodGet, "/schemas/openai?max_description_length="+strconv.Itoa(n), nil, "application/json")
		if err != nil {
			return err
		}
		detail, err := problemDetail(r, http.StatusBadRequest)
		if err != nil {
			return fmt.Errorf("GET /schemas/openai?max_description_length=%d: %w", n, err)
		}
		s.errs = append(s.errs, detail)
		return nil
	})

	// ---- export ----
	export := func(ctx context.Context, provider string) error {
		return getState(ctx).exportSchemas(provider, "")
	}
	sc.Step(`^I export schemas for "([^"]*)" provider$`, export)
	sc.Step(`^I export tool schemas for "([^"]*)"$`, export)
	sc.Step(`^the exported schemas should contain (\d+) schemas?$`, func(ctx context.Context, n int) error {
		s := getState(ctx)
		if s.exported == nil {
			return errors.New("no schemas were exported")
		}
		if len(s.exported) != n {
			return fmt.Errorf("exported schemas: want %d, got %d: %v", n, len(s.exported), s.exported)
		}
		return nil
	})
	sc.Step(`^the first exported schema should have tool_type "([^"]*)"$`, func(ctx context.Context, want string) error {
		s := getState(ctx)
		if len(s.exported) == 0 {
			return errors.New("no schemas were exported")
		}
		return wantString("first exported schema tool_type", s.exported[0]["tool_type"], want)
	})
	sc.Step(`^the exported schemas should include a tool with type "([^"]*)"$`, func(ctx context.Context, want string) error {
		s := getState(ctx)
		var got []any
		for _, t := range s.exported {
			if t["tool_type"] == want {
				if _, ok := t["definition"].(map[string]any); !ok {
					return fmt.Errorf("exported %s tool has no definition: %v", want, t)
				}
				return nil
			}
			got = append(got, t["tool_type"])
		}
		return fmt.Errorf("want an exported tool with tool_type %q, got tool types %v", want, got)
	})
	sc.Step(`^the exported validation schema should have mode "([^"]*)"$`, func(ctx context.Context, want string) error {
		t, err := getState(ctx).validationItem()
		if err != nil {
			return err
		}
		return wantString("validation_mode", t["validation_mode"], want)
	})
	sc.Step(`^the exported validation schema should not have a mode$`, func(ctx context.Context) error {
		t, err := getState(ctx).validationItem()
		if err != nil {
			return err
		}
		if m, ok := t["validation_mode"]; ok {
			return fmt.Errorf("want no validation_mode, got %#v", m)
		}
		return nil
	})
}
