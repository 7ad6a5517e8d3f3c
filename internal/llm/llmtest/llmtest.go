// Package llmtest provides fake LLM provider servers for tests: OpenAI Chat
// Completions, Anthropic Messages, Ollama /api/chat, OpenAI Responses,
// Gemini generateContent and Bedrock Converse. Each fake speaks the
// provider's real wire format (taken from recorded responses and the
// providers' own specs and SDK types, not from this project's adapters),
// rejects what the real service rejects with the real status and error
// body, and answers with scripted turns.
//
// The core type needs no testing.TB: NewServer builds a fake, Start serves it
// on an address (cmd/fakellm does this), and New wraps both around an
// httptest server for unit tests.
package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Provider names a provider's wire format.
type Provider string

// The supported providers.
const (
	OpenAI    Provider = "openai"
	Anthropic Provider = "anthropic"
	Ollama    Provider = "ollama"
	// OpenAIResponses is the OpenAI Responses API (POST /v1/responses).
	OpenAIResponses Provider = "openai-responses"
	// Gemini is the Gemini API's models/{model}:generateContent.
	Gemini Provider = "gemini"
	// Bedrock is the Amazon Bedrock Converse API.
	Bedrock Provider = "bedrock"
)

// Providers lists every fake, in the order tests run them.
var Providers = []Provider{OpenAI, Anthropic, Ollama, OpenAIResponses, Gemini, Bedrock}

// A Turn is what the fake model answers next: text, tool calls, or an HTTP
// failure.
type Turn struct {
	// Text is the assistant's text (with ToolCalls: the text before them).
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls the model asks for.
	ToolCalls []Call `json:"tool_calls,omitempty"`
	// Status, when non-zero, makes the fake answer with this HTTP status and
	// the provider's own error body for it instead of a completion.
	Status int `json:"status,omitempty"`
	// RetryAfter is sent as the Retry-After header with Status.
	RetryAfter string `json:"retry_after,omitempty"`
	// ErrorMessage replaces the provider's stock message for Status.
	ErrorMessage string `json:"error_message,omitempty"`
	// Usage is the token usage to report (default: DefaultUsage).
	Usage *Usage `json:"usage,omitempty"`
	// TextToolCall (OpenAI and Ollama only) writes the tool calls as JSON
	// text in the content instead of tool_calls, the way small local models
	// do: one call is {"name": …, "arguments": {…}}, several are a JSON list
	// of those. Anthropic ignores it.
	TextToolCall bool `json:"text_tool_call,omitempty"`
	// FinishReason (Gemini only) stops the candidate for this reason
	// ("SAFETY", "RECITATION", …) without content.
	FinishReason string `json:"finish_reason,omitempty"`
}

// IsZero reports whether t says nothing at all (a TurnFunc returning it
// defers to the script).
func (t Turn) IsZero() bool {
	return t.Text == "" && len(t.ToolCalls) == 0 && t.Status == 0 && t.Usage == nil && !t.TextToolCall &&
		t.RetryAfter == "" && t.ErrorMessage == "" && t.FinishReason == ""
}

// Call is one tool call of a Turn.
type Call struct {
	// ID is the provider's call id; "" makes the fake generate one in the
	// provider's style (OpenAI call_…, Anthropic toolu_01…, Ollama call_…,
	// or none for Ollama with WithoutToolCallIDs).
	ID        string         `json:"id,omitempty"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// Usage is a token count to report.
// InputTokens counts every input token, CachedInputTokens those of them
// read from a prompt cache; each fake reports them in its provider's own
// fields (OpenAI prompt_tokens_details.cached_tokens, Responses
// input_tokens_details.cached_tokens, Anthropic cache_read_input_tokens
// beside the uncached input_tokens, Gemini cachedContentTokenCount, Bedrock
// cacheReadInputTokens beside the uncached inputTokens; Ollama has none).
type Usage struct {
	InputTokens       int `json:"input_tokens"`
	OutputTokens      int `json:"output_tokens"`
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
}

// DefaultUsage is reported when a Turn has no Usage.
var DefaultUsage = Usage{InputTokens: 25, OutputTokens: 12}

// DoneText is the answer once the script is exhausted and no default is set.
const DoneText = "done"

// Recorded is one request the fake received.
type Recorded struct {
	Method string         `json:"method"`
	Path   string         `json:"path"`
	Header http.Header    `json:"header"`
	Body   map[string]any `json:"body"` // nil unless the body is a JSON object
	Raw    []byte         `json:"-"`
}

// Option configures a Server.
type Option func(*config)

type config struct {
	apiKey        string
	model         string
	turnFunc      func(Recorded) Turn
	def           *Turn
	noToolCallIDs bool
	now           func() time.Time
}

// WithAPIKey makes the fake require this key: OpenAI "Authorization: Bearer
// KEY", Anthropic "x-api-key: KEY", Gemini "x-goog-api-key: KEY", Bedrock a
// SigV4 signature by the access key id KEY (and BedrockSecretKey). Ollama
// has no authentication and ignores it. Without it any key (or none) is
// accepted (Bedrock still wants a valid signature).
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithModel makes the fake know only this model; a request naming another
// gets the provider's "model not found" answer. Without it any model name is
// accepted. For Ollama "name" and "name:latest" are the same model.
func WithModel(name string) Option { return func(c *config) { c.model = name } }

// WithTurnFunc decides every answer from the request (e.g. to echo a tool
// result back). A zero Turn defers to the script and the default.
func WithTurnFunc(f func(req Recorded) Turn) Option { return func(c *config) { c.turnFunc = f } }

// WithDefault sets the answer once the script is exhausted (default: the
// text DoneText).
func WithDefault(t Turn) Option { return func(c *config) { c.def = &t } }

// WithoutToolCallIDs makes the Ollama fake send tool calls without "id" and
// "index", the way Ollama before v0.12.10 (and some models) do. Other
// providers ignore it.
func WithoutToolCallIDs() Option { return func(c *config) { c.noToolCallIDs = true } }

// Server is one fake provider.
type Server struct {
	// URL is the base_url to configure, as CONTRACT §3 and the official
	// SDKs take it: OpenAI (both APIs) Origin+"/v1", the others Origin.
	URL string
	// Origin is scheme://host:port of the fake.
	Origin string

	provider Provider
	cfg      config

	mu         sync.Mutex
	reasoning  map[string]issuedReasoning // Responses: call_id → its reasoning item
	signatures map[string][]string        // Gemini: function call name+args → the thoughtSignatures sent with it
	queue      []Turn
	requests   []Recorded
	rejections []string

	ln  net.Listener
	srv *http.Server
}

// NewServer builds a fake for p; it serves nothing until Start (or use it as
// an http.Handler). It panics on an unknown provider.
func NewServer(p Provider, opts ...Option) *Server {
	if !slices.Contains(Providers, p) {
		panic("llmtest: unknown provider " + string(p))
	}
	s := &Server{provider: p}
	for _, o := range opts {
		o(&s.cfg)
	}
	if s.cfg.now == nil {
		s.cfg.now = time.Now
	}
	return s
}

// New starts a fake for p on a loopback httptest server that t's cleanup
// closes; rejected requests are logged at cleanup.
func New(t testing.TB, p Provider, opts ...Option) *Server {
	t.Helper()
	s := NewServer(p, opts...)
	ts := httptest.NewServer(s)
	s.setOrigin(ts.URL)
	t.Cleanup(func() {
		ts.Close()
		for _, r := range s.Rejections() {
			t.Logf("llmtest %s fake rejected a request: %s", p, r)
		}
	})
	return s
}

// Start serves the fake on addr (host:port; port 0 picks a free one) until
// Close, and sets URL and Origin.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.setOrigin("http://" + ln.Addr().String())
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// Close stops a server started with Start.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

func (s *Server) setOrigin(origin string) {
	s.Origin = strings.TrimRight(origin, "/")
	s.URL = s.Origin
	if s.provider == OpenAI || s.provider == OpenAIResponses {
		s.URL = s.Origin + "/v1"
	}
}

// Provider is the fake's wire format.
func (s *Server) Provider() Provider { return s.provider }

// Script appends turns to the queue the fake answers from, in order.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, turns...)
}

// Always drops the queued turns and answers turn forever.
func (s *Server) Always(turn Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = nil
	s.cfg.def = &turn
}

// Pending is the number of scripted turns not yet answered.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns every request received, rejected ones included.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// Rejections returns why each rejected request was rejected ("400 Bad
// Request: message"). Scripted failures (Turn.Status) are not rejections.
func (s *Server) Rejections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejections...)
}

// nextTurn picks the answer for an accepted request.
func (s *Server) nextTurn(rec Recorded) Turn {
	if f := s.cfg.turnFunc; f != nil {
		if t := f(rec); !t.IsZero() {
			return t
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		t := s.queue[0]
		s.queue = s.queue[1:]
		return t
	}
	if s.cfg.def != nil {
		return *s.cfg.def
	}
	return Turn{Text: DoneText}
}

func (s *Server) addRejection(status int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejections = append(s.rejections, strconv.Itoa(status)+" "+http.StatusText(status)+": "+msg)
}

const maxBody = 32 << 20

// ServeHTTP records the request and answers it as the provider would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) {
		s.serveControl(w, r)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := Recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		rec.Body = obj
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	switch s.provider {
	case OpenAI:
		s.serveOpenAI(w, r, rec)
	case Anthropic:
		s.serveAnthropic(w, r, rec)
	case Ollama:
		s.serveOllama(w, r, rec)
	case OpenAIResponses:
		s.serveResponses(w, r, rec)
	case Gemini:
		s.serveGemini(w, r, rec)
	case Bedrock:
		s.serveBedrock(w, r, rec)
	}
}

// controlPrefix serves the fake's own state, for tests that run it as a
// process (cmd/fakellm): GET requests and rejections, POST script and always.
const controlPrefix = "/_fakellm/"

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == controlPrefix+"requests":
		type wire struct {
			Method string         `json:"method"`
			Path   string         `json:"path"`
			Header http.Header    `json:"header"`
			Body   map[string]any `json:"body"`
			Raw    string         `json:"raw"`
		}
		out := []wire{}
		for _, rec := range s.Requests() {
			out = append(out, wire{rec.Method, rec.Path, rec.Header, rec.Body, string(rec.Raw)})
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodGet && r.URL.Path == controlPrefix+"rejections":
		out := s.Rejections()
		if out == nil {
			out = []string{}
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodPost && r.URL.Path == controlPrefix+"script":
		var turns []Turn
		if err := json.NewDecoder(r.Body).Decode(&turns); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.Script(turns...)
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && r.URL.Path == controlPrefix+"always":
		var t Turn
		if err := json.NewDecoder(r.Body).Decode(&t); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.Always(t)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// ParseTurns reads a JSON list of Turns (the cmd/fakellm -script format).
func ParseTurns(data []byte) ([]Turn, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var turns []Turn
	if err := dec.Decode(&turns); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the list of turns")
	}
	for i, t := range turns {
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("turn %d: tool call %d has no name", i, j)
			}
		}
	}
	return turns, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func usageOf(t Turn) Usage {
	if t.Usage != nil {
		return *t.Usage
	}
	return DefaultUsage
}

// argsJSON is a call's arguments as JSON text ({} for none).
func argsJSON(args map[string]any) string {
	if args == nil {
		return "{}"
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// textToolCalls is the content a small model writes instead of tool_calls.
func textToolCalls(calls []Call) string {
	type textCall struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	list := make([]textCall, len(calls))
	for i, c := range calls {
		args := c.Arguments
		if args == nil {
			args = map[string]any{}
		}
		list[i] = textCall{c.Name, args}
	}
	var v any = list
	if len(list) == 1 {
		v = list[0]
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// splitText cuts text into word-sized stream pieces (each keeps its leading
// space), as token streams look.
func splitText(text string) []string {
	var out []string
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' && text[i-1] != ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// splitN cuts s into pieces of at most n bytes (on rune boundaries).
func splitN(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
