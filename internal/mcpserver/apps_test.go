package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

type toolSlice []*toolrouter.Tool

func (l toolSlice) Tools() []*toolrouter.Tool { return l }

// fakeResources serves one text per backend URI.
type fakeResources map[string]string

func (f fakeResources) ReadResource(_ context.Context, server, uri string) (*mcp.ReadResourceResult, string, error) {
	text, ok := f[server+" "+uri]
	if !ok {
		return nil, "", errors.New("no such resource")
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: text}}}, "sha256:" + text, nil
}

// TestAppsResources (SEP-1865): a tool's UI is listed under the gateway's
// ui:// name (both keys when the server used the legacy one); a
// resources/read of that name reaches the tool's server with its own URI
// and answers under the gateway's name; two servers' equal URIs stay
// apart; a client that sees no tool naming it, an unknown name and a
// resource changed since it was pinned are refused with -32602.
func TestAppsResources(t *testing.T) {
	tools := toolSlice{
		{Name: "a/show", MCPServer: "a", MCPTool: "show", UI: &toolrouter.AppUI{ResourceURI: "ui://view", ResourceSHA256: "sha256:A"}},
		{Name: "b/show", MCPServer: "b", MCPTool: "show", UI: &toolrouter.AppUI{ResourceURI: "ui://view", Legacy: true, Visibility: []string{"app"}, ResourceSHA256: "sha256:B"}},
	}
	res := fakeResources{"a ui://view": "A", "b ui://view": "B-changed"}
	h := New(Deps{Tools: func() Tools { return tools }, Resources: res})
	mt := definition(tools[1])
	ui, _ := mt.Meta["ui"].(map[string]any)
	if ui["resourceUri"] != "ui://b/view" || mt.Meta["ui/resourceUri"] != "ui://b/view" || len(ui["visibility"].([]string)) != 1 {
		t.Fatalf("b/show's _meta: %v", mt.Meta)
	}
	onlyA := access.NewClients(nil, []registry.Client{{Name: "a-only", Tools: []string{"a/*"}}}).ByName("a-only")
	handle := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the SDK's: no such resource"}
	})
	read := func(c *access.Client, uri string) (*readResult, error) {
		req := &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}}
		if c != nil {
			req.Extra = &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: c}}}
		}
		r, err := handle(context.Background(), "resources/read", req)
		if err != nil {
			return nil, err
		}
		return r.(*readResult), nil
	}
	if r, err := read(nil, "ui://a/view"); err != nil || r.Contents[0].Text != "A" || r.Contents[0].URI != "ui://a/view" {
		t.Fatalf("read ui://a/view: %v %+v", err, r)
	}
	for _, c := range []struct {
		client *access.Client
		uri    string
	}{{onlyA, "ui://b/view"}, {nil, "ui://c/view"}, {nil, "ui://view"}, {nil, "ui://b/view"}} {
		_, err := read(c.client, c.uri)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("read %s: %v, want -32602", c.uri, err)
		}
	}
}

// userResources answers as the user in the read's context, and asks a
// user without a connection to connect (auth mode oauth).
type userResources struct{}

type needsConnect struct{ url string }

func (n needsConnect) Error() string      { return "backend a: connect it first" }
func (n needsConnect) ConnectURL() string { return n.url }

func (userResources) ReadResource(ctx context.Context, _, uri string) (*mcp.ReadResourceResult, string, error) {
	u := access.UserFromContext(ctx)
	if u == nil || u.Subject == "bob" {
		return nil, "", needsConnect{"https://tr.example/connect/xyz"}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: u.Subject}}}, "", nil
}

// TestAppsReadAsUser (docs/backend-auth.md): a read reaches Resources with
// the request's user, as a call does; a user who must connect the backend
// first gets the -32042 URL elicitation when the client declared URL
// elicitation (in its request's clientCapabilities), else -32603 naming
// the URL.
func TestAppsReadAsUser(t *testing.T) {
	tools := toolSlice{{Name: "a/show", MCPServer: "a", MCPTool: "show", UI: &toolrouter.AppUI{ResourceURI: "ui://view"}}}
	h := New(Deps{Tools: func() Tools { return tools }, Resources: userResources{}})
	handle := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, errors.New("not relayed") })
	read := func(user string, meta mcp.Meta) (mcp.Result, error) {
		req := &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "ui://a/view", Meta: meta},
			Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{userExtra: &access.User{Subject: user}}}}}
		return handle(context.Background(), "resources/read", req)
	}
	if r, err := read("alice", nil); err != nil || r.(*readResult).Contents[0].Text != "alice" {
		t.Fatalf("alice's read: %v %v", r, err)
	}
	_, err := read("bob", mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeURLElicitationRequired || !strings.Contains(string(je.Data), "https://tr.example/connect/xyz") {
		t.Errorf("bob's read with URL elicitation: %v, want -32042 with the URL", err)
	}
	_, err = read("bob", nil)
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.HasSuffix(je.Message, ": https://tr.example/connect/xyz") {
		t.Errorf("bob's read without: %v, want -32603 naming the URL", err)
	}
}
