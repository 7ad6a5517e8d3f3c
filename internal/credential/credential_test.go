package credential_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/credential"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// backend records the credential of each call.
type backend struct{ got []*toolrouter.Credential }

func (b *backend) Call(_ context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	b.got = append(b.got, req.Credential)
	return toolrouter.Outcome{Output: json.RawMessage(`{}`)}
}

func clientCtx(t *testing.T, name string, creds map[string]string) context.Context {
	t.Helper()
	spec := toolrouter.ClientSpec{Name: name, KeySHA256: []byte(name), Credentials: map[string]toolrouter.Secret{}}
	for k, v := range creds {
		spec.Credentials[k] = toolrouter.NewSecret(v)
	}
	cs := access.NewClients(nil, []toolrouter.ClientSpec{spec})
	return access.NewContext(context.Background(), cs.ByName(name))
}

func TestPerClient(t *testing.T) {
	b := &backend{}
	ex := (&credential.Decorator{}).Wrap(b)
	tool := &toolrouter.Tool{Name: "crm/lookup", Auth: &toolrouter.BackendAuth{Mode: toolrouter.AuthPerClient, Header: "X-Api-Key"}}
	out := ex.Call(clientCtx(t, "support", map[string]string{"crm/lookup": "tok-support"}), toolrouter.ExecRequest{Tool: tool})
	if !out.Success() || len(b.got) != 1 || b.got[0].Header != "X-Api-Key" || b.got[0].Value.Reveal() != "tok-support" {
		t.Fatalf("out %+v, sent %+v", out, b.got)
	}
	if out.Credential == nil || out.Credential.Mode != "per_client" || out.Credential.Actor != "support" || !strings.HasPrefix(out.Credential.TokenID, "sha256:") {
		t.Fatalf("credential use %+v", out.Credential)
	}
	// A client without a credential is refused, naming the backend; the
	// backend is never called.
	out = ex.Call(clientCtx(t, "sales", nil), toolrouter.ExecRequest{Tool: tool})
	if out.Category != toolrouter.CategoryAuth || !strings.Contains(out.Err, "backend crm/lookup") || len(b.got) != 1 {
		t.Fatalf("out %+v, calls %d", out, len(b.got))
	}
}

// as is an RFC 8693 token endpoint that issues tokens of the given
// lifetime and counts exchanges.
func as(t *testing.T, life time.Duration, refuse string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "toolrouterd" || secret != "s3cret" {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || r.Form.Get("audience") != "https://gh" {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"invalid_request"}`)
			return
		}
		if r.Form.Get("subject_token") == refuse {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"invalid_grant","error_description":"subject token `+refuse+` revoked"}`)
			return
		}
		k := n.Add(1)
		fmt.Fprintf(w, `{"access_token":"xt-%s-%d","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":%d}`,
			r.Form.Get("subject_token"), k, int(life.Seconds()))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestTokenExchangeCachesAndRefuses(t *testing.T) {
	srv, n := as(t, time.Hour, "jwt-mallory")
	now := time.Now()
	xch := &credential.Exchanger{Now: func() time.Time { return now }, MaxTokens: 2}
	b := &backend{}
	ex := (&credential.Decorator{Exchanger: xch}).Wrap(b)
	auth := &toolrouter.BackendAuth{Mode: toolrouter.AuthTokenExchange, TokenURL: srv.URL, ClientID: "toolrouterd",
		ClientSecret: toolrouter.NewSecret("s3cret"), Audience: "https://gh"}
	tool := &toolrouter.Tool{Name: "gh/x", Auth: auth, Timeout: 5 * time.Second}
	call := func(user, token string) toolrouter.Outcome {
		ctx := access.NewUserContext(context.Background(), &access.User{Subject: user, Token: toolrouter.NewSecret(token)})
		return ex.Call(ctx, toolrouter.ExecRequest{Tool: tool})
	}
	call("alice", "jwt-alice")
	call("alice", "jwt-alice")
	call("bob", "jwt-bob")
	if n.Load() != 2 || b.got[0].Value.Reveal() != "Bearer xt-jwt-alice-1" || b.got[1].Value.Reveal() != "Bearer xt-jwt-alice-1" || b.got[2].Value.Reveal() != "Bearer xt-jwt-bob-2" {
		t.Fatalf("%d exchanges, sent %v %v %v", n.Load(), b.got[0].Value.Reveal(), b.got[1].Value.Reveal(), b.got[2].Value.Reveal())
	}
	// Near its expiry a token is exchanged again.
	now = now.Add(time.Hour - 10*time.Second)
	call("alice", "jwt-alice")
	if n.Load() != 3 {
		t.Fatalf("%d exchanges after expiry, want 3", n.Load())
	}
	if xch.Cached() > 2 {
		t.Fatalf("cache holds %d, bound 2", xch.Cached())
	}
	out := call("mallory", "jwt-mallory")
	if out.Category != toolrouter.CategoryAuth || !strings.Contains(out.Err, `error "invalid_grant"`) || !strings.Contains(out.Err, "backend gh/x") || strings.Contains(out.Err, "jwt-mallory") {
		t.Fatalf("refused exchange: %+v", out)
	}
	out = ex.Call(context.Background(), toolrouter.ExecRequest{Tool: tool})
	if out.Category != toolrouter.CategoryAuth {
		t.Fatalf("no user: %+v", out)
	}
}

// TestExchangedTokensAreKeptPerClient: one person calling through two
// clients (apps) gets a token exchanged for each: the token issued for
// one app's JWT is never sent on the other's call.
func TestExchangedTokensAreKeptPerClient(t *testing.T) {
	srv, n := as(t, time.Hour, "")
	xch := &credential.Exchanger{}
	b := &backend{}
	ex := (&credential.Decorator{Exchanger: xch}).Wrap(b)
	auth := &toolrouter.BackendAuth{Mode: toolrouter.AuthTokenExchange, TokenURL: srv.URL, ClientID: "toolrouterd",
		ClientSecret: toolrouter.NewSecret("s3cret"), Audience: "https://gh"}
	tool := &toolrouter.Tool{Name: "gh/x", Auth: auth, Timeout: 5 * time.Second}
	call := func(client, token string) {
		ctx := access.NewContext(context.Background(), &access.Client{Name: client})
		ctx = access.NewUserContext(ctx, &access.User{Subject: "alice", Token: toolrouter.NewSecret(token)})
		if out := ex.Call(ctx, toolrouter.ExecRequest{Tool: tool}); !out.Success() {
			t.Fatalf("%s: %+v", client, out)
		}
	}
	call("app-a", "jwt-a")
	call("app-b", "jwt-b")
	call("app-a", "jwt-a")
	if n.Load() != 2 || b.got[1].Value.Reveal() != "Bearer xt-jwt-b-2" || b.got[2].Value.Reveal() != "Bearer xt-jwt-a-1" {
		t.Fatalf("%d exchanges, sent %v %v %v", n.Load(), b.got[0].Value.Reveal(), b.got[1].Value.Reveal(), b.got[2].Value.Reveal())
	}
}

func TestTokenExchangeASDownIsBounded(t *testing.T) {
	// An AS that never answers: the call fails within the tool's timeout.
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	t.Cleanup(func() { close(block); srv.Close() })
	ex := (&credential.Decorator{Exchanger: &credential.Exchanger{}}).Wrap(&backend{})
	tool := &toolrouter.Tool{Name: "gh/x", Timeout: 200 * time.Millisecond, Auth: &toolrouter.BackendAuth{Mode: toolrouter.AuthTokenExchange,
		TokenURL: srv.URL, ClientID: "toolrouterd", ClientSecret: toolrouter.NewSecret("s3cret"), Audience: "https://gh"}}
	ctx := access.NewUserContext(context.Background(), &access.User{Subject: "alice", Token: toolrouter.NewSecret("jwt-alice")})
	start := time.Now()
	out := ex.Call(ctx, toolrouter.ExecRequest{Tool: tool})
	if out.Category != toolrouter.CategoryAuth || !strings.Contains(out.Err, "did not answer in time") || time.Since(start) > 5*time.Second {
		t.Fatalf("out %+v after %s", out, time.Since(start))
	}
}

// echo answers the credential it got, in its error and its output.
type echo struct{}

func (echo) Call(_ context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	v := req.Credential.Value.Reveal()
	return toolrouter.Outcome{Err: "invalid token " + v, Category: toolrouter.CategoryPermission,
		Output: json.RawMessage(`{"got":"` + v + `"}`), Answered: true}
}

func TestABackendThatEchoesTheTokenIsScrubbed(t *testing.T) {
	ex := (&credential.Decorator{}).Wrap(echo{})
	tool := &toolrouter.Tool{Name: "crm/lookup", Auth: &toolrouter.BackendAuth{Mode: toolrouter.AuthPerClient}}
	out := ex.Call(clientCtx(t, "support", map[string]string{"crm/lookup": "tok-support-123"}), toolrouter.ExecRequest{Tool: tool})
	if strings.Contains(out.Err, "tok-support") || strings.Contains(string(out.Output), "tok-support") || !json.Valid(out.Output) {
		t.Fatalf("the token came back: %q %s", out.Err, out.Output)
	}
}

// reporter reports the credential it got in a progress message and an
// MCP log message while the call runs.
type reporter struct{}

func (reporter) Call(_ context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	v := req.Credential.Value.Reveal()
	req.Progress(1, 2, "using "+v)
	req.Relay.Progress(1, 2, "using "+v)
	req.Relay.Log("info", "", json.RawMessage(`{"msg":"token `+v+`"}`))
	return toolrouter.Outcome{Output: json.RawMessage(`{}`), Answered: true}
}

func TestReportsThatEchoTheTokenAreScrubbed(t *testing.T) {
	ex := (&credential.Decorator{}).Wrap(reporter{})
	tool := &toolrouter.Tool{Name: "crm/lookup", Auth: &toolrouter.BackendAuth{Mode: toolrouter.AuthPerClient}}
	var got []string
	relay := &toolrouter.Relay{
		Progress: func(_, _ float64, m string) { got = append(got, m) },
		Log:      func(_, _ string, d json.RawMessage) { got = append(got, string(d)) },
	}
	ex.Call(clientCtx(t, "support", map[string]string{"crm/lookup": "tok-support-123"}), toolrouter.ExecRequest{Tool: tool, Relay: relay,
		Progress: func(_, _ float64, m string) { got = append(got, m) }})
	if len(got) != 3 {
		t.Fatalf("reports %q", got)
	}
	for _, m := range got {
		if strings.Contains(m, "tok-support") {
			t.Fatalf("the token came back in a report: %q", got)
		}
	}
}

// Concurrent calls of one user share one exchange.
func TestConcurrentCallsShareOneExchange(t *testing.T) {
	release := make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		<-release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"xt-shared","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(srv.Close)
	xch := &credential.Exchanger{}
	auth := &toolrouter.BackendAuth{Mode: toolrouter.AuthTokenExchange, TokenURL: srv.URL, ClientID: "toolrouterd",
		ClientSecret: toolrouter.NewSecret("s3cret"), Audience: "https://gh"}
	tool := &toolrouter.Tool{Name: "gh/x", Auth: auth, Timeout: 10 * time.Second}
	ctx := access.NewUserContext(context.Background(), &access.User{Subject: "alice", Token: toolrouter.NewSecret("jwt-alice")})
	const calls = 8
	outs := make(chan toolrouter.Outcome, calls)
	started := make(chan struct{}, calls)
	for range calls {
		go func() {
			b := &backend{}
			started <- struct{}{}
			outs <- (&credential.Decorator{Exchanger: xch}).Wrap(b).Call(ctx, toolrouter.ExecRequest{Tool: tool})
		}()
	}
	for range calls {
		<-started
	}
	// Wait until the first exchange reached the server, then let it answer.
	for n.Load() == 0 {
		runtime.Gosched()
	}
	close(release)
	for range calls {
		if out := <-outs; !out.Success() {
			t.Fatalf("call failed: %+v", out)
		}
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("%d calls made %d exchanges, want 1", calls, got)
	}
}
