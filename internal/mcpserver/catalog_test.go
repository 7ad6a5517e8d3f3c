package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// fakeCatalogs is servers a, b and c, each with n resources file:///r{i},
// a template file:///t/{name}, n prompts p{i}, and a ui:// resource.
type fakeCatalogs struct{ n int }

func (f fakeCatalogs) Catalogs() []Catalog {
	var out []Catalog
	for _, s := range []string{"a", "b", "c"} {
		k := Catalog{Server: s, Prefix: s + "/", Templates: []*mcp.ResourceTemplate{{URITemplate: "file:///t/{name}", Name: "t"}},
			Resources: []*mcp.Resource{{URI: "ui://app.html", Name: "app"}}}
		for i := range f.n {
			k.Resources = append(k.Resources, &mcp.Resource{URI: fmt.Sprintf("file:///r%02d", i), Name: "r"})
			k.Prompts = append(k.Prompts, &mcp.Prompt{Name: fmt.Sprintf("p%02d", i)})
		}
		out = append(out, k)
	}
	return out
}

func (fakeCatalogs) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{Description: server + " " + name + " " + args["x"] + " " + access.UserFromContext(ctx).Subject}, nil
}

// TestCatalogLists: resources/list, resources/templates/list and
// prompts/list are each one sorted list across servers under the
// gateway's names, paged with one cursor (nothing missing, nothing
// twice), within the client's scope; a forged cursor, or another list's,
// is -32602; prompts/get and resources/read (of a listed resource, or one
// a template matches) reach the item's server.
func TestCatalogLists(t *testing.T) {
	h := New(Deps{Tools: func() Tools { return toolSlice{} }, Catalogs: fakeCatalogs{n: 5}, PageSize: 4,
		Resources: fakeResources{"b file:///r03": "R3", "c file:///t/x": "TX"}})
	handle := h.intercept(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		switch method { // the SDK's own lists: empty
		case "resources/list":
			return &mcp.ListResourcesResult{}, nil
		case "resources/templates/list":
			return &mcp.ListResourceTemplatesResult{}, nil
		case "prompts/list":
			return &mcp.ListPromptsResult{}, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the SDK's: unknown"}
	})
	extra := func(c *access.Client) *mcp.RequestExtra {
		return &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: c, userExtra: &access.User{Subject: "alice"}}}}
	}
	walk := func(c *access.Client, method string) (names []string, pages int, cursors []string) {
		t.Helper()
		cursor := ""
		for {
			var req mcp.Request
			switch method {
			case "resources/list":
				req = &mcp.ListResourcesRequest{Params: &mcp.ListResourcesParams{Cursor: cursor}, Extra: extra(c)}
			case "resources/templates/list":
				req = &mcp.ListResourceTemplatesRequest{Params: &mcp.ListResourceTemplatesParams{Cursor: cursor}, Extra: extra(c)}
			default:
				req = &mcp.ListPromptsRequest{Params: &mcp.ListPromptsParams{Cursor: cursor}, Extra: extra(c)}
			}
			res, err := handle(context.Background(), method, req)
			if err != nil {
				t.Fatalf("%s page %d: %v", method, pages+1, err)
			}
			pages++
			switch r := res.(type) {
			case *mcp.ListResourcesResult:
				for _, x := range r.Resources {
					names = append(names, x.URI)
				}
				cursor = r.NextCursor
			case *mcp.ListResourceTemplatesResult:
				for _, x := range r.ResourceTemplates {
					names = append(names, x.URITemplate)
				}
				cursor = r.NextCursor
			case *mcp.ListPromptsResult:
				for _, x := range r.Prompts {
					names = append(names, x.Name)
				}
				cursor = r.NextCursor
			}
			if cursor == "" {
				return names, pages, cursors
			}
			cursors = append(cursors, cursor)
		}
	}
	names, pages, cursors := walk(nil, "resources/list")
	if len(names) != 15 || pages != 4 || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != 15 ||
		names[0] != "file://a//r00" || names[14] != "file://c//r04" {
		t.Errorf("resources/list: %d pages of %q", pages, names)
	}
	if names, _, _ := walk(nil, "resources/templates/list"); !slices.Equal(names, []string{"file://a//t/{name}", "file://b//t/{name}", "file://c//t/{name}"}) {
		t.Errorf("resources/templates/list: %q", names)
	}
	prompts, _, _ := walk(nil, "prompts/list")
	if len(prompts) != 15 || prompts[0] != "a/p00" || prompts[14] != "c/p04" {
		t.Errorf("prompts/list: %q", prompts)
	}
	onlyB := access.NewClients(nil, []registry.Client{{Name: "b-only", Tools: []string{"b/resources/*", "b/prompts/p01"}}}).ByName("b-only")
	if names, _, _ := walk(onlyB, "resources/list"); len(names) != 5 || names[0] != "file://b//r00" {
		t.Errorf("resources/list for b-only: %q", names)
	}
	if names, _, _ := walk(onlyB, "prompts/list"); !slices.Equal(names, []string{"b/p01"}) {
		t.Errorf("prompts/list for b-only: %q", names)
	}
	// A forged cursor, and the resources' cursor given to prompts/list.
	for _, cursor := range []string{"forged", cursors[0]} {
		_, err := handle(context.Background(), "prompts/list", &mcp.ListPromptsRequest{Params: &mcp.ListPromptsParams{Cursor: cursor}})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("prompts/list with cursor %q: %v, want -32602", cursor, err)
		}
	}
	got, err := handle(context.Background(), "prompts/get", &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "b/p02", Arguments: map[string]string{"x": "1"}}, Extra: extra(nil)})
	if err != nil || got.(*mcp.GetPromptResult).Description != "b p02 1 alice" {
		t.Errorf("prompts/get b/p02: %v %+v", err, got)
	}
	for _, name := range []string{"b/p99", "p02"} {
		if _, err := handle(context.Background(), "prompts/get", &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: name}, Extra: extra(nil)}); err == nil {
			t.Errorf("prompts/get %s answered", name)
		}
	}
	if _, err := handle(context.Background(), "prompts/get", &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "b/p02"}, Extra: extra(onlyB)}); err == nil {
		t.Error("prompts/get of a prompt out of the client's scope answered")
	}
	read := func(c *access.Client, uri string) (string, error) {
		r, err := handle(context.Background(), "resources/read", &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}, Extra: extra(c)})
		if err != nil {
			return "", err
		}
		ct := r.(*readResult).Contents[0]
		return ct.URI + " " + ct.Text, nil
	}
	if got, err := read(nil, "file://b//r03"); err != nil || got != "file://b//r03 R3" {
		t.Errorf("read file://b//r03: %q %v", got, err)
	}
	if got, err := read(nil, "file://c//t/x"); err != nil || got != "file://c//t/x TX" {
		t.Errorf("read file://c//t/x (a template's): %q %v", got, err)
	}
	for _, c := range []struct {
		client *access.Client
		uri    string
	}{{nil, "file://b//r99"}, {nil, "file:///r03"}, {onlyB, "file://a//r03"}, {nil, "file://z//r03"}} {
		if got, err := read(c.client, c.uri); err == nil {
			t.Errorf("read %s answered %q", c.uri, got)
		}
	}
}

// TestCatalogEmptyLists: with nothing to list, each list is [] (the
// schema wants an array), never null.
func TestCatalogEmptyLists(t *testing.T) {
	h := New(Deps{Tools: func() Tools { return toolSlice{} }, Catalogs: fakeCatalogs{}})
	handle := h.intercept(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/list":
			return &mcp.ListResourcesResult{}, nil
		case "resources/templates/list":
			return &mcp.ListResourceTemplatesResult{}, nil
		}
		return &mcp.ListPromptsResult{}, nil
	})
	onlyA := access.NewClients(nil, []registry.Client{{Name: "a-only", Tools: []string{"a/none"}}}).ByName("a-only")
	extra := &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: onlyA}}}
	for method, req := range map[string]mcp.Request{"resources/list": &mcp.ListResourcesRequest{Extra: extra},
		"resources/templates/list": &mcp.ListResourceTemplatesRequest{Extra: extra}, "prompts/list": &mcp.ListPromptsRequest{Extra: extra}} {
		res, err := handle(context.Background(), method, req)
		b, _ := json.Marshal(res)
		if err != nil || strings.Contains(string(b), "null") {
			t.Errorf("%s: %v %s", method, err, b)
		}
	}
}

// TestGatewayURI: a resource's URI and its gateway name map both ways.
func TestGatewayURI(t *testing.T) {
	for uri, want := range map[string]string{"file:///a/b": "file://s//a/b", "https://x.example/y": "https://s/x.example/y", "urn:isbn:1": "urn:s/isbn:1", "ui://v": "ui://s/v"} {
		g, ok := GatewayURI("s", uri)
		server, back, ok2 := ParseGatewayURI(g)
		if !ok || !ok2 || g != want || server != "s" || back != uri {
			t.Errorf("%s: %q (%s, %s)", uri, g, server, back)
		}
	}
	if _, ok := GatewayURI("s", "no-scheme"); ok {
		t.Error("a URI without a scheme has a gateway name")
	}
}

// dotCatalogs is server d with one template covering every file URI.
type dotCatalogs struct{}

func (dotCatalogs) Catalogs() []Catalog {
	return []Catalog{{Server: "d", Prefix: "d/", Templates: []*mcp.ResourceTemplate{{URITemplate: "file:///{+path}", Name: "any"}}}}
}

func (dotCatalogs) GetPrompt(context.Context, string, string, map[string]string) (*mcp.GetPromptResult, error) {
	return nil, errors.New("no prompts")
}

// TestCatalogReadDotSegments: a client whose scope reaches
// d/resources/file:///public/* reads a URI under public/ that a template
// matches, but not one that climbs out of it with a dot segment (plain,
// percent-encoded, or behind an encoded slash or a backslash), which a
// backend resolving the path would read outside the scope.
func TestCatalogReadDotSegments(t *testing.T) {
	res := fakeResources{"d file:///public/ok": "OK"}
	for _, u := range []string{"file:///public/../private/k", "file:///public/%2e%2e/private/k", "file:///public/%2E./private/k",
		"file:///public/..%2fprivate/k", "file:///public/..%5Cprivate/k", "file:///public/./../private/k", "file:///public/.."} {
		res["d "+u] = "SECRET"
	}
	h := New(Deps{Tools: func() Tools { return toolSlice{} }, Catalogs: dotCatalogs{}, Resources: res})
	handle := h.intercept(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the SDK's: unknown"}
	})
	public := access.NewClients(nil, []registry.Client{{Name: "public", Tools: []string{"d/resources/file:///public/*"}}}).ByName("public")
	read := func(uri string) (string, error) {
		r, err := handle(context.Background(), "resources/read", &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri},
			Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{clientExtra: public, userExtra: &access.User{Subject: "alice"}}}}})
		if err != nil {
			return "", err
		}
		return r.(*readResult).Contents[0].Text, nil
	}
	if got, err := read("file://d//public/ok"); err != nil || got != "OK" {
		t.Fatalf("read file://d//public/ok: %q %v", got, err)
	}
	for key := range res {
		if key == "d file:///public/ok" {
			continue
		}
		uri, _ := GatewayURI("d", strings.TrimPrefix(key, "d "))
		if got, err := read(uri); err == nil {
			t.Errorf("read %s answered %q", uri, got)
		}
	}
}
