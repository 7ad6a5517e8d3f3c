package e2e_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2/clientcredentials"
)

// readsUserServer is a go-sdk MCP server with an MCP Apps tool (its UI
// ui://view.html) and a skill (skill://triage/SKILL.md) whose reads check
// the bearer token of each request: a read with a token is refused unless
// the token verifies (for audience aud) and is recorded under its sub; a
// read without one (toolrouterd's own session, which digests the UI at
// discovery) is recorded as "". It publishes RFC 9728 metadata naming
// issuer, for auth mode oauth.
func readsUserServer(t *testing.T, v *verifier, aud, issuer string) (url string, readers func(uri string) []string) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string][]string{}
	const html, skillMD = "<html>the app</html>", "---\nname: triage\ndescription: Triage an incident\n---\nLook at the graphs.\n"
	sum := sha256.Sum256([]byte(skillMD))
	entry := map[string]any{"uri": "skill://triage/SKILL.md", "frontmatter": map[string]any{"name": "triage", "description": "Triage an incident"},
		"resources": []map[string]any{{"uri": "skill://triage/SKILL.md", "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(skillMD)}}}
	// report is a dynamic skill: its directory is read on the server.
	report := map[string]any{"uri": "skill://report/SKILL.md", "frontmatter": map[string]any{"name": "report", "description": "Today's report"}, "resources": "dynamic"}
	srv := mcp.NewServer(&mcp.Implementation{Name: "reads", Version: "v1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{},
			Extensions: map[string]any{"io.modelcontextprotocol/skills": map[string]any{"directoryRead": true}}}})
	srv.AddTool(&mcp.Tool{Name: "show", InputSchema: map[string]any{"type": "object"}, Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://view.html"}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shown"}}}, nil
		})
	// who checks a request's bearer and records its sub under key.
	who := func(h http.Header, key string) (string, error) {
		sub := ""
		if authz := h.Get("Authorization"); authz != "" {
			claims, err := v.verify(authz, aud)
			if err != nil {
				return "", fmt.Errorf("token rejected: %v", err)
			}
			sub, _ = claims["sub"].(string)
		}
		mu.Lock()
		seen[key] = append(seen[key], sub)
		mu.Unlock()
		return sub, nil
	}
	read := func(text, mime string) mcp.ResourceHandler {
		return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if _, err := who(req.GetExtra().Header, req.Params.URI); err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: mime, Text: text}}}, nil
		}
	}
	// The dynamic skill's directory holds a file named after its reader.
	if err := mcp.AddReceivingCustomMethod(srv, "resources/directory/read", func(ctx context.Context, _ *mcp.ServerSession, p *readsDirParams) (*readsDirResult, error) {
		if p.URI != "skill://report" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: p.URI + " is not a directory resource"}
		}
		sub, err := who(readsHeader(ctx), "dir "+p.URI)
		if err != nil {
			return nil, err
		}
		return &readsDirResult{Resources: []*mcp.Resource{{URI: "skill://report/SKILL.md", Name: "SKILL.md"}, {URI: "skill://report/" + sub + ".md", Name: sub + ".md"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	srv.AddResource(&mcp.Resource{URI: "ui://view.html", Name: "view", MIMEType: "text/html;profile=mcp-app"}, read(html, "text/html;profile=mcp-app"))
	srv.AddResource(&mcp.Resource{URI: "skill://triage/SKILL.md", Name: "triage", MIMEType: "text/markdown"}, read(skillMD, "text/markdown"))
	if err := mcp.AddReceivingCustomMethod(srv, "skills/list", func(context.Context, *mcp.ServerSession, *appsSkillsListParams) (*appsSkillsListResult, error) {
		return &appsSkillsListResult{Skills: []map[string]any{entry, report}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	// A custom method's handler sees no request: its headers ride in the
	// context.
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ex := req.GetExtra(); ex != nil {
				ctx = context.WithValue(ctx, readsHeaderKey{}, ex.Header)
			}
			return next(ctx, method, req)
		}
	})
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": ts.URL + "/mcp", "authorization_servers": []string{issuer}})
	})
	return ts.URL + "/mcp", func(uri string) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen[uri])
	}
}

// resources/directory/read's, for the go-sdk fixture.
type readsDirParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

type readsDirResult struct {
	mcp.ResultBase
	Resources  []*mcp.Resource `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

type readsHeaderKey struct{}

func readsHeader(ctx context.Context) http.Header {
	h, _ := ctx.Value(readsHeaderKey{}).(http.Header)
	return h
}

// TestAppsReadsAsUser (issue 34 items 2-3, docs/backend-auth.md): reads of
// a token_exchange backend's UI resource and skill file through /mcp are
// made with the caller's user's exchanged token, each user's own, two
// users sharing one /mcp session; an oauth backend's UI read by a user
// who has not connected it answers -32042 with the connect URL (URL
// elicitation) as a tool call does.
func TestAppsReadsAsUser(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	public := "http://" + addr
	as := startTestAS(t, "-audiences", "http://gh", "-user-claims", "app=portal", "-client", "toolrouterd:tr-secret-Zq81",
		"-oauth-client", "tr-web:web-secret-Qx7w", "-redirect-uri", public+"/oauth/callback")
	issuer := as.URL()
	v := &verifier{issuer: issuer, jwks: issuer + "/keys"}
	gh, readers := readsUserServer(t, v, "http://gh", issuer)
	saas, _ := readsUserServer(t, v, "tr-web", issuer)
	tokenURL := issuer + "/oauth/token"
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	reg := fmt.Sprintf(`mcp_servers:
  - {name: gh, url: %q, prefix: "gh/", auth: {mode: token_exchange, token_url: %q, client_id_env: TR_CLIENT_ID, client_secret_env: TR_CLIENT_SECRET, audience: "http://gh"}}
  - {name: saas, url: %q, prefix: "saas/", auth: {mode: oauth, client_id_env: WEB_CLIENT_ID, client_secret_env: WEB_CLIENT_SECRET, scopes: [openid]}}
clients:
  - {name: portal, jwt_subject: portal, tools: ["*"]}
`, gh, tokenURL, saas)
	rt, _ := startRouter(t, reg, "TOOLROUTER_ADDR="+addr, "TOOLROUTER_PUBLIC_URL="+public,
		"TOOLROUTER_TOKEN_KEYS=k1:"+base64.StdEncoding.EncodeToString(key), "WEB_CLIENT_ID=tr-web", "WEB_CLIENT_SECRET=web-secret-Qx7w",
		"TR_CLIENT_ID=toolrouterd", "TR_CLIENT_SECRET=tr-secret-Zq81",
		"TOOLROUTER_JWT_ISSUER="+issuer, "TOOLROUTER_JWT_JWKS_URL="+issuer+"/keys", "TOOLROUTER_JWT_AUDIENCE=toolrouterd",
		"TOOLROUTER_JWT_SUBJECT_CLAIM=app")
	userToken := func(user, secret string) string {
		cc := clientcredentials.Config{ClientID: user, ClientSecret: secret, TokenURL: tokenURL}
		tok, err := cc.Token(context.Background())
		if err != nil {
			t.Fatalf("%s's token: %v", user, err)
		}
		return "Bearer " + tok.AccessToken
	}
	alice, bob := userToken("alice", "alice-pw"), userToken("bob", "bob-pw")

	// Two users on one /mcp session, each read made as its request's user.
	sess := mcpSession(t, rt.URL(), "2025-11-25", "Authorization", alice)
	order := []struct{ name, tok string }{{"alice", alice}, {"bob", bob}, {"alice", alice}}
	for _, uri := range []string{"ui://gh/view.html", "skill://gh/triage/SKILL.md"} {
		for i, u := range order {
			r := mcpPost(t, rt.URL(), sess, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, 10+i, uri), "Authorization", u.tok)
			res, code, msg := r.rpc(t)
			if code != 0 || !strings.Contains(fmt.Sprint(res["contents"]), uri) {
				t.Fatalf("%s reads %s: %d %s %v", u.name, uri, code, msg, res)
			}
		}
		backend := strings.Replace(strings.Replace(uri, "ui://gh/", "ui://", 1), "skill://gh/", "skill://", 1)
		var users []string
		for _, sub := range readers(backend) {
			if sub != "" { // toolrouterd's own session: the UI's digest at discovery
				users = append(users, sub)
			}
		}
		if !slices.Equal(users, []string{"alice", "bob", "alice"}) {
			t.Errorf("the backend's reads of %s were made for %q, want alice, bob, alice", backend, readers(backend))
		}
	}

	// resources/directory/read (SEP-2640): declared, since every skill
	// can be answered; the listed skill's root from its files in force,
	// the dynamic skill's relayed to its server as each user.
	res, _, _ := mcpPost(t, rt.URL(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, "Authorization", alice).rpc(t)
	if !strings.Contains(fmt.Sprint(res["capabilities"]), "io.modelcontextprotocol/skills:map[directoryRead:true]") {
		t.Errorf("initialize declares %v, want the skills extension with directoryRead", res["capabilities"])
	}
	dir := func(uri, tok string) (map[string]any, int, string) {
		t.Helper()
		return mcpPost(t, rt.URL(), sess, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"resources/directory/read","params":{"uri":%q}}`, uri), "Authorization", tok).rpc(t)
	}
	if res, code, msg := dir("skill://gh/triage", alice); code != 0 || fmt.Sprint(res["resources"]) != "[map[mimeType:text/markdown name:SKILL.md uri:skill://gh/triage/SKILL.md]]" {
		t.Errorf("the listed skill's root: %d %s %v", code, msg, res)
	}
	for _, u := range order[:2] {
		res, code, msg := dir("skill://gh/report", u.tok)
		if want := "skill://gh/report/" + u.name + ".md"; code != 0 || !strings.Contains(fmt.Sprint(res["resources"]), want) {
			t.Errorf("%s reads the dynamic skill's root: %d %s %v, want %s", u.name, code, msg, res, want)
		}
	}
	if got := readers("dir skill://report"); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("the backend's directory reads were made for %q, want alice, bob", got)
	}
	if _, code, msg := dir("skill://gh/triage/SKILL.md", alice); code != -32602 {
		t.Errorf("a file read as a directory: %d %s, want -32602", code, msg)
	}

	// oauth: bob never connected saas; a client that declared URL
	// elicitation gets -32042 with his connect URL, another client an
	// error naming it.
	init := mcpPost(t, rt.URL(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"e2e","version":"1"}}}`, "Authorization", bob)
	esess := init.Header.Get("Mcp-Session-Id")
	if esess == "" {
		t.Fatalf("initialize: %d %s", init.Status, init.Body)
	}
	mcpPost(t, rt.URL(), esess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Authorization", bob)
	const read = `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"ui://saas/view.html"}}`
	r := mcpPost(t, rt.URL(), esess, read, "Authorization", bob)
	if _, code, msg := r.rpc(t); code != -32042 || !strings.Contains(string(r.Body), public+"/connect/") {
		t.Errorf("bob's read of saas with URL elicitation: %d %s %s", code, msg, r.Body)
	}
	r = mcpPost(t, rt.URL(), sess, read, "Authorization", bob)
	if _, code, msg := r.rpc(t); code != -32603 || !strings.Contains(msg, public+"/connect/") {
		t.Errorf("bob's read of saas without URL elicitation: %d %s", code, msg)
	}
}

// readsCatalogServer is a go-sdk MCP server with one tool, n resources
// file:///r{i} (each reads its URI), a template file:///t/{name} and n
// prompts p{i}.
func readsCatalogServer(t *testing.T, n int) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "catalog", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "content of " + req.Params.URI}}}, nil
	}
	for i := range n {
		srv.AddResource(&mcp.Resource{URI: fmt.Sprintf("file:///r%03d", i), Name: fmt.Sprintf("r%03d", i)}, read)
		srv.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("p%03d", i)}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "prompt " + req.Params.Name}}}}, nil
		})
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///t/{name}", Name: "t"}, read)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// readsWalk lists every page of resources/list (what "resources") or
// prompts/list, following one cursor: the names and the pages.
func readsWalk(t *testing.T, cs *mcp.ClientSession, what string) (names []string, pages int) {
	t.Helper()
	cursor := ""
	for {
		var next string
		switch what {
		case "resources":
			res, err := cs.ListResources(context.Background(), &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				t.Fatalf("resources/list page %d: %v", pages+1, err)
			}
			for _, r := range res.Resources {
				names = append(names, r.URI)
			}
			next = res.NextCursor
		default:
			res, err := cs.ListPrompts(context.Background(), &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				t.Fatalf("prompts/list page %d: %v", pages+1, err)
			}
			for _, p := range res.Prompts {
				names = append(names, p.Name)
			}
			next = res.NextCursor
		}
		pages++
		if cursor = next; cursor == "" {
			return names, pages
		}
	}
}

// TestAppsResourcePromptLists (issue 34 item 4): three go-sdk backends of
// 500 resources and 500 prompts each behind the binary list through /mcp
// as 1,500 resources and 1,500 prompts over two pages of one cursor each,
// on both protocol eras, nothing missing and nothing twice; a virtual
// server lists only what its tools patterns cover; a listed resource, one
// a template matches, and a prompt are read and got through the gateway;
// a forged cursor is -32602.
func TestAppsResourcePromptLists(t *testing.T) {
	t.Parallel()
	a, b, c := readsCatalogServer(t, 500), readsCatalogServer(t, 500), readsCatalogServer(t, 500)
	rt, _ := startRouter(t, fmt.Sprintf(`mcp_servers:
  - {name: a, url: %s, prefix: a_, tools: ["*"]}
  - {name: b, url: %s, prefix: b_, tools: ["*"]}
  - {name: c, url: %s, prefix: c_, tools: ["*"]}
virtual_servers:
  - {name: docs, tools: ["b_resources/*", "c_prompts/p00*"]}
clients:
  - {name: agent, key_env: AGENT_KEY, tools: ["*"]}
`, a, b, c), "AGENT_KEY=agent-key")
	want := func(format string, servers ...string) []string {
		var out []string
		for _, s := range servers {
			for i := range 500 {
				out = append(out, fmt.Sprintf(format, s, i))
			}
		}
		return out
	}
	for _, version := range []string{"", "2025-11-25"} {
		cs := appsConnect(t, rt.URL()+"/mcp", "agent-key", version)
		caps := cs.InitializeResult().Capabilities
		if caps.Resources == nil || caps.Prompts == nil {
			t.Errorf("%q: initialize declares %+v, want resources and prompts", version, caps)
		}
		resources, pages := readsWalk(t, cs, "resources")
		if w := want("file://%s//r%03d", "a", "b", "c"); !slices.Equal(resources, w) || pages != 2 {
			t.Errorf("%q: resources/list gave %d over %d pages, want the 1,500 of the three servers over 2", version, len(resources), pages)
		}
		prompts, pages := readsWalk(t, cs, "prompts")
		if w := want("%s_p%03d", "a", "b", "c"); !slices.Equal(prompts, w) || pages != 2 {
			t.Errorf("%q: prompts/list gave %d over %d pages, want 1,500 over 2", version, len(prompts), pages)
		}
		for uri, backend := range map[string]string{"file://b//r123": "file:///r123", "file://c//t/notes": "file:///t/notes"} {
			res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].Text != "content of "+backend {
				t.Errorf("%q: read %s: %v %+v", version, uri, err, res)
			}
		}
		got, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "a_p042"})
		if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "prompt p042" {
			t.Errorf("%q: prompts/get a_p042: %v %+v", version, err, got)
		}
		if _, err := cs.ListPrompts(context.Background(), &mcp.ListPromptsParams{Cursor: "forged"}); err == nil || !strings.Contains(err.Error(), "invalid cursor") {
			t.Errorf("%q: prompts/list with a forged cursor: %v", version, err)
		}
	}
	// The virtual server: b's resources, c's prompts p000-p009.
	cs := appsConnect(t, rt.URL()+"/mcp/docs", "agent-key", "")
	if resources, _ := readsWalk(t, cs, "resources"); !slices.Equal(resources, want("file://%s//r%03d", "b")) {
		t.Errorf("/mcp/docs resources/list: %d, want b's 500", len(resources))
	}
	prompts, _ := readsWalk(t, cs, "prompts")
	if w := want("%s_p%03d", "c")[:10]; !slices.Equal(prompts, w) {
		t.Errorf("/mcp/docs prompts/list: %q, want %q", prompts, w)
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file://a//r001"}); err == nil {
		t.Error("/mcp/docs reads a resource outside its view")
	}
}
