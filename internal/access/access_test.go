package access_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

func TestScope(t *testing.T) {
	t.Parallel()
	s := access.NewScope([]string{"billing/*", "math/add", "kb/?earch", "files/*/read*"})
	for name, want := range map[string]bool{
		"billing/refund": true, "billing/a/b": true, "billing": false, "billing/": true,
		"math/add": true, "math/addx": false, "math/ad": false,
		"kb/search": true, "kb/Search": true, "kb/research": false,
		"files/x/readme": true, "files/x/y/read": true, "files/read": false,
		"other": false, "": false,
	} {
		if got := s.Match(name); got != want {
			t.Errorf("Match(%q) = %v, want %v", name, got, want)
		}
	}
	if !access.NewScope([]string{"*"}).Match("any/thing.at_all") {
		t.Error(`"*" does not match every tool`)
	}
	if access.NewScope(nil).Match("x") {
		t.Error("no patterns match something")
	}
	if !access.NewScope([]string{"a*b*c"}).Match("a/xbyyc") || access.NewScope([]string{"a*b*c"}).Match("a/xbyy") {
		t.Error("multiple stars")
	}
}

func TestCouldMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, prefix string
		want            bool
	}{
		{"files/*", "files/", true}, {"*", "files/", true}, {"fi*", "files/", true},
		{"files/read", "files/", true}, {"kb/*", "files/", false},
	} {
		if got := access.CouldMatch(tc.pattern, tc.prefix); got != tc.want {
			t.Errorf("CouldMatch(%q, %q) = %v", tc.pattern, tc.prefix, got)
		}
	}
}

func TestNilClientAllowsAll(t *testing.T) {
	t.Parallel()
	var c *access.Client
	if !c.Allows("anything") || c.LabelName() != "" {
		t.Error("nil client")
	}
	if access.FromContext(context.Background()) != nil {
		t.Error("FromContext of an empty context")
	}
}

func reg(t *testing.T, src string, env map[string]string) *registry.Registry {
	t.Helper()
	r, err := registry.Parse("r.yaml", []byte(src), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const twoClients = `clients:
  - name: billing
    key_env: BILLING_KEY
    tools: ["billing/*"]
    rate_limit: 2/m
  - name: support
    jwt_subject: support-bot
    tools: ["kb/*"]
`

func TestAuthenticateKeys(t *testing.T) {
	t.Parallel()
	r := reg(t, twoClients, map[string]string{"BILLING_KEY": "b-key"})
	a := access.NewAuthenticator([]string{"env-key-1", "env-key-2", "b-key"}, func() *registry.Registry { return r }, nil)
	var warnings []string
	a.OnBuild = func(cs *access.Clients) { warnings = cs.Warnings }
	for _, tc := range []struct{ header, client, denied string }{
		{"Bearer b-key", "billing", ""},
		{"bearer b-key", "billing", ""},
		{"BEARER   b-key  ", "billing", ""},
		{"Bearer env-key-1", "key-1", ""},
		{"Bearer env-key-2", "key-2", ""},
		{"", "", "header missing"},
		{"Bearer nope", "", "matches no client"},
		{"Basic b-key", "", "must be Bearer"},
		{"Bearer", "", "must be Bearer"},
		{"Bearer a.b.c", "", "matches no client"}, // JWT off: just a wrong key
	} {
		req := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		c, err := a.Authenticate(context.Background(), req)
		switch {
		case tc.denied != "":
			if err == nil || !access.IsDenied(err) || !strings.Contains(err.Error(), tc.denied) {
				t.Errorf("%q: client %v, err %v; want denied %q", tc.header, c, err, tc.denied)
			}
		case err != nil || c == nil || c.Name != tc.client:
			t.Errorf("%q: client %+v, err %v; want %s", tc.header, c, err, tc.client)
		}
	}
	// key-3 ("b-key") is the billing client's key: the named client wins.
	if len(warnings) != 1 || !strings.Contains(warnings[0], `key 3 is also the key of client "billing"`) {
		t.Errorf("warnings = %q", warnings)
	}
	if got := strings.Join(a.Clients().Names(), ","); got != "billing,support,key-1,key-2" {
		t.Errorf("names = %s", got)
	}
	c := a.Clients().ByKey("env-key-1")
	if !c.Allows("billing/refund") || c.Admin {
		t.Errorf("an API key client has every tool and no admin: %+v", c)
	}
	b := a.Clients().ByKey("b-key")
	if !b.Allows("billing/refund") || b.Allows("kb/search") {
		t.Error("billing scope")
	}
}

func TestOpenWithoutKeysOrClients(t *testing.T) {
	t.Parallel()
	r := registry.Empty()
	a := access.NewAuthenticator(nil, func() *registry.Registry { return r }, nil)
	c, err := a.Authenticate(context.Background(), httptest.NewRequest("GET", "/", nil))
	if c != nil || err != nil || !a.Open() {
		t.Errorf("open service: %v %v", c, err)
	}
}

func TestAuthenticatorFollowsReload(t *testing.T) {
	t.Parallel()
	cur := reg(t, twoClients, map[string]string{"BILLING_KEY": "b-key"})
	a := access.NewAuthenticator(nil, func() *registry.Registry { return cur }, nil)
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer b-key")
	if c, err := a.Authenticate(context.Background(), req); err != nil || c.Name != "billing" {
		t.Fatalf("before reload: %v %v", c, err)
	}
	cur = reg(t, "clients:\n  - name: other\n    key_sha256: "+strings.Repeat("ab", 32)+"\n", nil)
	if _, err := a.Authenticate(context.Background(), req); !access.IsDenied(err) {
		t.Fatalf("a removed client still authenticates: %v", err)
	}
}

// TestWindow runs on the limiter's own clock (time.Now) in a synctest
// bubble, whose fake time starts at midnight: windows are aligned to it.
func TestWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testWindow)
}

func testWindow(t *testing.T) {
	r := reg(t, twoClients, map[string]string{"BILLING_KEY": "b-key"})
	cs := access.NewClients(nil, r.Clients())
	w := access.NewWindow()
	b := cs.ByKey("b-key")
	ctx := context.Background()
	time.Sleep(10 * time.Second) // 10 s into a minute
	v, _ := w.Take(ctx, b, 1)
	if !v.Allowed || v.Remaining != 1 || v.Reset != 50*time.Second {
		t.Fatalf("first: %+v", v)
	}
	if v, _ := w.Take(ctx, b, 2); v.Allowed || v.Remaining != 1 {
		t.Fatalf("a batch of 2 with 1 left: %+v", v)
	}
	if v, _ := w.Take(ctx, b, 1); !v.Allowed || v.Remaining != 0 {
		t.Fatalf("last: %+v", v)
	}
	v, _ = w.Take(ctx, b, 1)
	if v.Allowed {
		t.Fatalf("over the limit: %+v", v)
	}
	rec := httptest.NewRecorder()
	v.SetHeaders(rec.Header())
	h := rec.Header()
	if h.Get("Retry-After") != "50" || h.Get("RateLimit-Policy") != `"tool-calls";q=2;w=60` || h.Get("RateLimit") != `"tool-calls";r=0;t=50` {
		t.Errorf("headers = %v", h)
	}
	if !strings.Contains(v.Message("billing"), `client "billing" exceeded (2/m); retry in 50s`) {
		t.Errorf("message = %s", v.Message("billing"))
	}
	time.Sleep(49 * time.Second)
	if v, _ := w.Take(ctx, b, 1); v.Allowed || v.Reset != time.Second {
		t.Fatalf("a second before the next window: %+v", v)
	}
	time.Sleep(time.Second) // the next minute
	if v, _ := w.Take(ctx, b, 2); !v.Allowed || v.Remaining != 0 {
		t.Fatalf("next window: %+v", v)
	}
	if v, _ := w.Take(ctx, cs.BySubject("support-bot"), 1000); !v.Allowed {
		t.Fatal("a client without a limit was limited")
	}
	var open *access.Client
	if v, _ := w.Take(ctx, open, 1); !v.Allowed {
		t.Fatal("the open service was limited")
	}
}

func TestApprovalRights(t *testing.T) {
	t.Parallel()
	r := reg(t, `clients:
  - name: agent
    key_env: AGENT_KEY
    tools: ["*"]
    approval: ["billing/*"]
  - name: reviewer
    key_env: REVIEWER_KEY
    tools: ["*"]
    approver: true
  - name: root
    key_env: ROOT_KEY
    tools: ["*"]
    admin: true
`, map[string]string{"AGENT_KEY": "a", "REVIEWER_KEY": "r", "ROOT_KEY": "o"})
	cs := access.NewClients([]string{"plain"}, r.Clients())
	agent, reviewer, root, plain := cs.ByKey("a"), cs.ByKey("r"), cs.ByKey("o"), cs.ByKey("plain")
	if !agent.NeedsApproval("billing/refund") || agent.NeedsApproval("kb/search") || reviewer.NeedsApproval("billing/refund") {
		t.Error("NeedsApproval does not follow the client's approval patterns")
	}
	var open *access.Client
	if open.NeedsApproval("billing/refund") {
		t.Error("the open service has no client patterns")
	}
	for c, want := range map[*access.Client]bool{agent: false, reviewer: true, root: true, plain: false, open: true} {
		if c.MayApprove() != want {
			t.Errorf("%s: MayApprove = %v, want %v", c.LabelName(), !want, want)
		}
	}
	if !root.IsAdmin() || reviewer.IsAdmin() || !open.IsAdmin() {
		t.Error("IsAdmin")
	}
}

// sharedCounter is a store's TakeRate in memory (memory.Store's rule: all n
// or nothing), keeping the windows it was asked about.
type sharedCounter struct {
	used    map[string]int
	windows []time.Time
	err     error
}

func (c *sharedCounter) TakeRate(_ context.Context, client string, window time.Time, n, quota int) (int, bool, error) {
	if c.err != nil {
		return 0, false, c.err
	}
	c.windows = append(c.windows, window)
	k := client + "@" + window.String()
	if c.used[k]+n > quota {
		return c.used[k], false, nil
	}
	c.used[k] += n
	return c.used[k], true, nil
}

// TestShared: the shared limiter asks its counter for the window of its
// clock (time.Now, in a synctest bubble), answers with the window's reset
// and wraps the counter's error with the client's name.
func TestShared(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := reg(t, twoClients, map[string]string{"BILLING_KEY": "b-key"})
		cs := access.NewClients(nil, r.Clients())
		b := cs.ByKey("b-key")
		c := &sharedCounter{used: map[string]int{}}
		s := access.NewShared(c)
		var limited []string
		s.OnLimited = func(client string, calls int) { limited = append(limited, fmt.Sprintf("%s:%d", client, calls)) }
		ctx := context.Background()
		time.Sleep(15 * time.Second)
		if v, err := s.Take(ctx, b, 2); err != nil || !v.Allowed || v.Remaining != 0 || v.Reset != 45*time.Second {
			t.Fatalf("first: %+v %v", v, err)
		}
		if v, err := s.Take(ctx, b, 0); err != nil || v.Allowed || v.Remaining != 0 {
			t.Fatalf("over the limit (n 0 counts as 1): %+v %v", v, err)
		}
		time.Sleep(45 * time.Second)
		if v, err := s.Take(ctx, b, 1); err != nil || !v.Allowed || v.Remaining != 1 || v.Reset != time.Minute {
			t.Fatalf("next window: %+v %v", v, err)
		}
		midnight := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		if want := []time.Time{midnight, midnight, midnight.Add(time.Minute)}; !slices.EqualFunc(c.windows, want, time.Time.Equal) {
			t.Errorf("windows asked %v, want %v", c.windows, want)
		}
		if !slices.Equal(limited, []string{"billing:1"}) {
			t.Errorf("OnLimited told %v", limited)
		}
		if v, err := s.Take(ctx, cs.BySubject("support-bot"), 1000); err != nil || !v.Allowed || len(c.windows) != 3 {
			t.Fatalf("a client without a limit: %+v %v (the counter asked %d times)", v, err, len(c.windows))
		}
		c.err = errors.New("connection refused")
		if _, err := s.Take(ctx, b, 1); err == nil || !strings.Contains(err.Error(), `client "billing": connection refused`) {
			t.Errorf("counter error: %v", err)
		}
	})
}

// A client runs only the models its models globs grant; a registry client
// without them runs none; a TOOLROUTER_API_KEYS client and the open
// service run every model. model_turns is counted apart from rate_limit.
func TestModelScopesAndTurns(t *testing.T) {
	t.Parallel()
	r := reg(t, `clients:
  - {name: none, key_env: NONE_KEY, tools: ["*"], rate_limit: 1/h}
  - {name: some, key_env: SOME_KEY, tools: [], models: ["openai/gpt-4o*", "*/llama?"], model_turns: 2/h, rate_limit: 1/h}
`, map[string]string{"NONE_KEY": "n-key", "SOME_KEY": "s-key"})
	cs := access.NewClients([]string{"api-key"}, r.Clients())
	none, some, keyed := cs.ByKey("n-key"), cs.ByKey("s-key"), cs.ByKey("api-key")
	var open *access.Client
	for _, tc := range []struct {
		c               *access.Client
		provider, model string
		want            bool
	}{
		{none, "openai", "gpt-4o", false},
		{some, "openai", "gpt-4o-mini", true},
		{some, "openai", "o1-pro", false},
		{some, "local", "llama3", true},
		{some, "local", "llama31", false},
		{some, "anthropic", "gpt-4o", false},
		{keyed, "openai", "o1-pro", true},
		{open, "openai", "o1-pro", true},
	} {
		if got := tc.c.AllowsModel(tc.provider, tc.model); got != tc.want {
			t.Errorf("%s may use %s/%s: %v, want %v", tc.c.LabelName(), tc.provider, tc.model, got, tc.want)
		}
	}
	synctest.Test(t, func(t *testing.T) { testTurns(t, some, none) })
}

// testTurns runs in a synctest bubble: no window ends during it.
func testTurns(t *testing.T, some, none *access.Client) {
	ctx := context.Background()
	turns, calls := access.NewWindow(), access.NewWindow()
	turns.ModelTurns = true
	if v, _ := calls.Take(ctx, some, 1); !v.Allowed {
		t.Fatal("the tool call of the hour")
	}
	for i := range 2 { // counted apart from the tool call
		if v, _ := turns.Take(ctx, some, 1); !v.Allowed || v.Rate.String() != "2/h" {
			t.Fatalf("turn %d: %+v", i+1, v)
		}
	}
	v, _ := turns.Take(ctx, some, 1)
	if v.Allowed || !strings.Contains(v.TurnsMessage("some"), `model turn limit of client "some" exceeded (2/h)`) {
		t.Fatalf("third turn: %+v %s", v, v.TurnsMessage("some"))
	}
	if v, _ := turns.Take(ctx, none, 100); !v.Allowed {
		t.Fatal("a client without model_turns was limited")
	}
	// Tool calls and turns in one Shared store: separate counters.
	st := &sharedCounter{used: map[string]int{}}
	sc, sturns := access.NewShared(st), access.NewShared(st)
	sturns.ModelTurns = true
	if v, _ := sc.Take(ctx, some, 1); !v.Allowed {
		t.Fatal("shared: the tool call of the hour")
	}
	if v, _ := sturns.Take(ctx, some, 2); !v.Allowed {
		t.Fatal("shared: two turns after a tool call")
	}
	if v, _ := sturns.Take(ctx, some, 1); v.Allowed {
		t.Fatal("shared: a third turn")
	}
	for k := range st.used {
		if strings.ContainsRune(k, 0) {
			t.Errorf("shared counter key %q holds a NUL, which PostgreSQL text refuses", k)
		}
	}
}
