package access_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

func TestScope(t *testing.T) {
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
	r := registry.Empty()
	a := access.NewAuthenticator(nil, func() *registry.Registry { return r }, nil)
	c, err := a.Authenticate(context.Background(), httptest.NewRequest("GET", "/", nil))
	if c != nil || err != nil || !a.Open() {
		t.Errorf("open service: %v %v", c, err)
	}
}

func TestAuthenticatorFollowsReload(t *testing.T) {
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

func TestWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	w := access.NewWindow()
	w.Now = func() time.Time { return now }
	r := reg(t, twoClients, map[string]string{"BILLING_KEY": "b-key"})
	cs := access.NewClients(nil, r.Clients())
	b := cs.ByKey("b-key")
	ctx := context.Background()
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
	now = now.Add(50 * time.Second) // the next minute
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
