package mcpclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// catalogServer is a go-sdk server with n resources, a template and n
// prompts, listed 3 to a page.
func catalogServer(t *testing.T, n int) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "cat", Version: "1"}, &mcp.ServerOptions{PageSize: 3})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "hi"}}}, nil
	}
	for i := range n {
		s.AddResource(&mcp.Resource{URI: fmt.Sprintf("file:///r%02d", i), Name: "r"}, read)
		s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("p%02d", i)}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: req.Params.Name + " for " + req.GetExtra().Header.Get("Authorization")}, nil
		})
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///t/{name}", Name: "t"}, read)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("echo")}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestCatalogs (docs/mcp.md "Resources and prompts"): a server's
// resources, templates and prompts are listed with its tools over every
// page, through its allowlist; a listing past the discovery limits keeps
// the last good one (none here) without holding back the tools;
// GetPromptAs gets a prompt as the user of the credential.
func TestCatalogs(t *testing.T) {
	url := catalogServer(t, 10)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", url)})
	cats := fx.m.Catalogs()
	if len(cats) != 1 || cats[0].Server != "s" || cats[0].Prefix != "s/" || len(cats[0].Resources) != 10 || len(cats[0].Templates) != 1 || len(cats[0].Prompts) != 10 {
		t.Fatalf("catalogs: %+v", cats)
	}
	cred := &toolrouter.Credential{Header: "Authorization", Value: toolrouter.NewSecret("Bearer alice-token"),
		Use: toolrouter.CredentialUse{Mode: toolrouter.AuthTokenExchange, Subject: "alice"}}
	res, err := fx.m.GetPromptAs(context.Background(), "s", "p03", nil, cred)
	if err != nil || res.Description != "p03 for Bearer alice-token" {
		t.Errorf("GetPromptAs: %v %+v", err, res)
	}

	// The allowlist: one resource and one prompt.
	cfg := serverConfig("s", url)
	cfg.Tools = []string{"resources/file:///r01", "prompts/p02"}
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{cfg})
	cats = fx.m.Catalogs()
	if len(cats) != 1 || len(cats[0].Resources) != 1 || cats[0].Resources[0].URI != "file:///r01" || len(cats[0].Templates) != 0 || len(cats[0].Prompts) != 1 {
		t.Errorf("allowlisted catalogs: %+v", cats)
	}

	// Past the limit of items: no catalog, the tools still listed.
	big := catalogServer(t, 10)
	small := newManager(t)
	small.m.Limits = mcpclient.DiscoveryLimits{Tools: 5}
	small.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("big", big)})
	if cats := small.m.Catalogs(); len(cats) != 0 {
		t.Errorf("a catalog past the limit: %+v", cats)
	}
	if tools := toolNames(small.m.Tools()); len(tools) != 1 || tools[0] != "big/echo" {
		t.Errorf("the tools of a server whose catalog is past the limit: %v", tools)
	}
}
