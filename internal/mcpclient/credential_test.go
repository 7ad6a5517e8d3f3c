package mcpclient_test

//lint:file-ignore SA1019 logging is deprecated by MCP 2026-07-28 (SEP-2577) and still relayed from servers of the older revisions

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestCallCredential (docs/backend-auth.md): a call's credential replaces
// the server's header of the same name on that call's tools/call only,
// on the hot path and through the SDK; the session's other requests and
// calls without one keep the registry's header.
func TestCallCredential(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "who", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(req.GetExtra().Header.Get("Authorization"))}, nil
		})
	var mu sync.Mutex
	other := map[string]bool{} // Authorization of requests other than tools/call
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		other[r.Header.Get("Authorization")] = true
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	for _, path := range []string{"sdk", "hotpath"} {
		m := mcpclient.New(zerolog.Nop(), nil)
		if path == "sdk" {
			mcpclient.SetSDKCalls(m, true)
		}
		cfg := serverConfig("s", hs.URL)
		cfg.Headers = map[string]string{"Authorization": "Bearer static"}
		m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
		tool := find(t, m, "s/who")
		cred := &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer alice-token")}
		for i, tc := range []struct {
			cred *toolrouter.Credential
			want string
		}{{cred, "Bearer alice-token"}, {nil, "Bearer static"}, {cred, "Bearer alice-token"}} {
			out := m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Credential: tc.cred})
			if got := mcpText(t, out); got != tc.want {
				t.Errorf("%s call %d: the server got %q, want %q", path, i, got, tc.want)
			}
		}
		m.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if !other["Bearer static"] {
		t.Errorf("the session's requests carried %v, want the registry's header", other)
	}
}

// mcpText is the text an MCP call answered (its output, a JSON string).
func mcpText(t *testing.T, out toolrouter.Outcome) string {
	t.Helper()
	if !out.Success() {
		t.Fatalf("call failed: %s %s", out.Category, out.Err)
	}
	var s string
	if err := json.Unmarshal(out.Output, &s); err != nil {
		t.Fatalf("output %s is not a JSON string", out.Output)
	}
	return s
}

// TestUserSessions (docs/backend-auth.md "Isolation between users"):
// calls made with a backend credential take their user's own upstream
// session, opened with that user's credential, never another user's nor
// the registry's session; a user's calls share their session, and its
// requests carry the user's latest token.
func TestUserSessions(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "who", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(req.Session.ID())}, nil
		})
	var mu sync.Mutex
	seen := map[string]map[string]bool{} // session id → Authorization values of its requests
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		sid := r.Header.Get("Mcp-Session-Id")
		if sid == "" {
			sid = w.Header().Get("Mcp-Session-Id") // initialize
		}
		mu.Lock()
		if seen[sid] == nil {
			seen[sid] = map[string]bool{}
		}
		seen[sid][r.Header.Get("Authorization")] = true
		mu.Unlock()
	}))
	defer hs.Close()
	cred := func(user, token string) *toolrouter.Credential {
		return &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer " + token),
			Use: toolrouter.CredentialUse{Mode: toolrouter.AuthTokenExchange, Subject: user, Actor: "toolrouterd"}}
	}
	for _, path := range []string{"sdk", "hotpath"} {
		m := mcpclient.New(zerolog.Nop(), nil)
		if path == "sdk" {
			mcpclient.SetSDKCalls(m, true)
		}
		cfg := serverConfig("s", hs.URL)
		cfg.Headers = map[string]string{"Authorization": "Bearer static"}
		m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
		tool := find(t, m, "s/who")
		session := func(c *toolrouter.Credential) string {
			return mcpText(t, m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Credential: c}))
		}
		a1 := session(cred("alice", "alice-1"))
		b := session(cred("bob", "bob-1"))
		static := session(nil)
		a2 := session(cred("alice", "alice-2")) // her token was renewed
		if a1 != a2 || a1 == b || a1 == static || b == static {
			t.Errorf("%s: sessions alice %s then %s, bob %s, static %s; want alice's own, kept, and bob's own", path, a1, a2, b, static)
		}
		m.Close()
		mu.Lock()
		for sid, want := range map[string][]string{a1: {"Bearer alice-1", "Bearer alice-2"}, b: {"Bearer bob-1"}, static: {"Bearer static"}} {
			for auth := range seen[sid] {
				if !slices.Contains(want, auth) {
					t.Errorf("%s: session %s carried %q, want only %v", path, sid, auth, want)
				}
			}
			if !seen[sid][want[0]] {
				t.Errorf("%s: session %s never carried %q (its initialize)", path, sid, want[0])
			}
		}
		mu.Unlock()
	}
}

// TestUserSessionLost: when the server no longer knows a user's session
// (404), the call never ran: it is sent again on a new session of that
// user, and succeeds.
func TestUserSessionLost(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "who", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(req.Session.ID())}, nil
		})
	var mu sync.Mutex
	forgotten := map[string]bool{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gone := forgotten[r.Header.Get("Mcp-Session-Id")]
		mu.Unlock()
		if gone {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	cred := &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer alice-1"),
		Use: toolrouter.CredentialUse{Mode: toolrouter.AuthTokenExchange, Subject: "alice", Actor: "toolrouterd"}}
	for _, path := range []string{"sdk", "hotpath"} {
		m := mcpclient.New(zerolog.Nop(), nil)
		if path == "sdk" {
			mcpclient.SetSDKCalls(m, true)
		}
		m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", hs.URL)})
		tool := find(t, m, "s/who")
		first := mcpText(t, m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Credential: cred}))
		mu.Lock()
		forgotten[first] = true
		mu.Unlock()
		out := m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Credential: cred})
		if second := mcpText(t, out); second == first || out.Attempts != 2 {
			t.Errorf("%s: after the server forgot session %s the call came on %s after %d attempts; want a new session, 2 attempts", path, first, second, out.Attempts)
		}
		m.Close()
	}
}

// TestUserSessionRelaysLogs: a server that logs (on a protocol before
// 2026-07-28, where the session's logging/setLevel decides) sends its log
// messages of a user's call on that user's session too.
func TestUserSessionRelaysLogs(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "logger", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "log", InputSchema: objectSchema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "working"})
			return &mcp.CallToolResult{Content: text("done")}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	m := mcpclient.New(zerolog.Nop(), nil)
	defer m.Close()
	m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", hs.URL)})
	tool := find(t, m, "s/log")
	var mu sync.Mutex
	var logs []string
	relay := &toolrouter.Relay{Log: func(level, _ string, data json.RawMessage) {
		mu.Lock()
		logs = append(logs, level+" "+string(data))
		mu.Unlock()
	}}
	cred := &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer alice-1"),
		Use: toolrouter.CredentialUse{Mode: toolrouter.AuthTokenExchange, Subject: "alice", Actor: "toolrouterd"}}
	if got := mcpText(t, m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Credential: cred, Relay: relay})); got != "done" {
		t.Fatalf("call answered %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(logs, `info "working"`) {
		t.Errorf("relayed logs %v, want the server's info message", logs)
	}
}

// TestUserSessionsIdleClosed: user sessions unused for 10 minutes are
// closed (at the latest at a call a minute later), and their user gets a
// new one.
func TestUserSessionsIdleClosed(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "who", InputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(req.Session.ID())}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	m := mcpclient.New(zerolog.Nop(), nil)
	defer m.Close()
	m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", hs.URL)})
	tool := find(t, m, "s/who")
	now := time.Now()
	mcpclient.SetUserSessionClock(m, "s", func() time.Time { return now })
	call := func(user string) string {
		c := &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer " + user),
			Use: toolrouter.CredentialUse{Mode: toolrouter.AuthTokenExchange, Subject: user, Actor: "toolrouterd"}}
		return mcpText(t, m.Call(context.Background(), toolrouter.ExecRequest{Tool: tool, Credential: c}))
	}
	alice := call("alice")
	call("bob")
	if n := mcpclient.UserSessions(m, "s"); n != 2 {
		t.Fatalf("%d user sessions, want 2", n)
	}
	now = now.Add(11 * time.Minute)
	call("carol") // alice's and bob's are idle: closed
	if n := mcpclient.UserSessions(m, "s"); n != 1 {
		t.Errorf("%d user sessions after 11 idle minutes, want carol's alone", n)
	}
	if again := call("alice"); again == alice {
		t.Errorf("alice's idle session %s was kept", alice)
	}
	now = now.Add(11 * time.Minute)
	call("alice") // a sweep a minute on: carol's closes, alice's is reopened
	if n := mcpclient.UserSessions(m, "s"); n != 1 {
		t.Errorf("%d user sessions, want alice's alone", n)
	}
}

// TestReadResourceAs (docs/backend-auth.md): a read made for a user goes
// on that user's own session with that user's credential, as the user's
// calls do; a read without one keeps the server's session and header;
// the credential never shows in an error.
func TestReadResourceAs(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "ui://app/who.html", Name: "who"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			authz := req.GetExtra().Header.Get("Authorization")
			if authz == "Bearer mallory-token-0123" {
				return nil, errors.New("refused " + authz)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: authz + "|" + req.Session.ID()}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	m := mcpclient.New(zerolog.Nop(), nil)
	defer m.Close()
	cfg := serverConfig("s", hs.URL)
	cfg.Headers = map[string]string{"Authorization": "Bearer static"}
	m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	as := func(user string) *toolrouter.Credential {
		return &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer " + user + "-token-0123"),
			Use: toolrouter.CredentialUse{Mode: toolrouter.AuthTokenExchange, Subject: user, Actor: "tr"}}
	}
	read := func(cred *toolrouter.Credential) (authz, session string) {
		t.Helper()
		res, _, err := m.ReadResourceAs(context.Background(), "s", "ui://app/who.html", cred)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		authz, session, _ = strings.Cut(res.Contents[0].Text, "|")
		return authz, session
	}
	a1, as1 := read(as("alice"))
	b1, bs1 := read(as("bob"))
	st, ss := read(nil)
	a2, as2 := read(as("alice"))
	if a1 != "Bearer alice-token-0123" || a2 != a1 || b1 != "Bearer bob-token-0123" || st != "Bearer static" {
		t.Errorf("the server got alice %q, %q; bob %q; no user %q", a1, a2, b1, st)
	}
	if as1 != as2 || as1 == bs1 || as1 == ss || bs1 == ss {
		t.Errorf("sessions: alice %q then %q, bob %q, the server's %q; want alice's own, kept", as1, as2, bs1, ss)
	}
	_, _, err := m.ReadResourceAs(context.Background(), "s", "ui://app/who.html", as("mallory"))
	if err == nil || strings.Contains(err.Error(), "mallory-token-0123") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("a refused read: %v; want an error without the token", err)
	}
}
