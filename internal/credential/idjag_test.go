package credential_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/credential"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestIDJAGLegs: id_jag asks the IdP for an ID-JAG with the parameters
// of the Enterprise-Managed Authorization extension (§4), redeems it at
// the backend's authorization server with the jwt-bearer grant (§5),
// each leg authenticated with its own client, and keeps the access token
// like an exchanged one; a refusal at either leg is an auth failure
// naming the leg and the server's error code.
func TestIDJAGLegs(t *testing.T) {
	var mu sync.Mutex
	var forms []url.Values
	var basics []string
	record := func(r *http.Request) url.Values {
		_ = r.ParseForm()
		id, secret, _ := r.BasicAuth()
		mu.Lock()
		forms = append(forms, r.PostForm)
		basics = append(basics, id+":"+secret)
		mu.Unlock()
		return r.PostForm
	}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := record(r)
		w.Header().Set("Content-Type", "application/json")
		if f.Get("subject_token") == "jwt-mallory" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant","error_description":"jwt-mallory is not allowed"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":"jag-%s","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A","expires_in":300}`, f.Get("subject_token"))
	}))
	t.Cleanup(idp.Close)
	ras := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := record(r)
		w.Header().Set("Content-Type", "application/json")
		if f.Get("assertion") == "jag-jwt-eve" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":"at-for-%s","token_type":"Bearer","expires_in":3600}`, f.Get("assertion"))
	}))
	t.Cleanup(ras.Close)

	b := &backend{}
	ex := (&credential.Decorator{Exchanger: &credential.Exchanger{}}).Wrap(b)
	auth := &toolrouter.BackendAuth{Mode: toolrouter.AuthIDJAG, TokenURL: idp.URL, ClientID: "toolrouterd", ClientSecret: toolrouter.NewSecret("idp-s3cret"),
		Audience: "https://as.chat", Resource: "https://mcp.chat/", Scopes: []string{"chat.read", "chat.history"},
		BackendTokenURL: ras.URL, BackendClientID: "tr-at-chat", BackendClientSecret: toolrouter.NewSecret("as-s3cret")}
	tool := &toolrouter.Tool{Name: "chat/x", Auth: auth, Timeout: 5 * time.Second}
	call := func(user, token string) toolrouter.Outcome {
		ctx := access.NewUserContext(context.Background(), &access.User{Subject: user, Token: toolrouter.NewSecret(token)})
		return ex.Call(ctx, toolrouter.ExecRequest{Tool: tool})
	}
	out := call("alice", "jwt-alice")
	call("alice", "jwt-alice") // kept: no third request
	if !out.Success() || len(b.got) != 2 || b.got[0].Value.Reveal() != "Bearer at-for-jag-jwt-alice" || b.got[1].Value.Reveal() != "Bearer at-for-jag-jwt-alice" {
		t.Fatalf("out %+v, sent %+v", out, b.got)
	}
	if u := out.Credential; u == nil || u.Mode != "id_jag" || u.Subject != "alice" || u.Actor != "tr-at-chat" || !strings.HasPrefix(u.TokenID, "sha256:") {
		t.Fatalf("credential use %+v", out.Credential)
	}
	if len(forms) != 2 {
		t.Fatalf("%d token requests, want 2", len(forms))
	}
	want := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"},
		"audience": {"https://as.chat"}, "resource": {"https://mcp.chat/"}, "scope": {"chat.read chat.history"},
		"subject_token": {"jwt-alice"}, "subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"}}
	if forms[0].Encode() != want.Encode() || basics[0] != "toolrouterd:idp-s3cret" {
		t.Errorf("IdP request %s (%s), want %s", forms[0].Encode(), basics[0], want.Encode())
	}
	want = url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"jag-jwt-alice"}}
	if forms[1].Encode() != want.Encode() || basics[1] != "tr-at-chat:as-s3cret" {
		t.Errorf("backend AS request %s (%s), want %s", forms[1].Encode(), basics[1], want.Encode())
	}

	out = call("mallory", "jwt-mallory")
	if out.Category != toolrouter.CategoryAuth || !strings.Contains(out.Err, "backend chat/x: ID-JAG request") || !strings.Contains(out.Err, `"invalid_grant"`) || strings.Contains(out.Err, "mallory is not") {
		t.Errorf("IdP refusal: %+v", out)
	}
	out = call("eve", "jwt-eve")
	if out.Category != toolrouter.CategoryAuth || !strings.Contains(out.Err, "ID-JAG redemption") || !strings.Contains(out.Err, `"invalid_grant"`) || strings.Contains(out.Err, "jag-jwt-eve") {
		t.Errorf("backend AS refusal: %+v", out)
	}
}
