package mcpclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/mcpclient"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestMCPAppsUI (SEP-1865): a tool's _meta.ui (and the legacy flat key)
// becomes its UI; its ui:// resource is read at discovery and digested
// into the pinned definition, so a changed resource changes the
// definition; a call result's _meta.ui.resourceUri leaves under the
// gateway's name; ReadResource digests as discovery did.
func TestMCPAppsUI(t *testing.T) {
	var html atomic.Value
	html.Store("<html>v1</html>")
	f := newFakeServer(t, nil, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "show", InputSchema: objectSchema, Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://app/view.html"}}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: text("shown"), Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://app/view.html"}}}, nil
			})
		s.AddTool(&mcp.Tool{Name: "refresh", InputSchema: objectSchema, Meta: mcp.Meta{"ui/resourceUri": "ui://app/view.html", "ui": map[string]any{"visibility": []any{"app"}}}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: text("ok")}, nil
			})
		s.AddResource(&mcp.Resource{URI: "ui://app/view.html", Name: "view", MIMEType: "text/html;profile=mcp-app"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ui://app/view.html", MIMEType: "text/html;profile=mcp-app", Text: html.Load().(string)}}}, nil
			})
	}, false)
	fx := newManager(t)
	fx.m.Sync(context.Background(), []toolrouter.MCPServer{serverConfig("s", f.URL())})
	show, refresh := find(t, fx.m, "s/show"), find(t, fx.m, "s/refresh")
	if show.UI == nil || show.UI.ResourceURI != "ui://app/view.html" || !strings.HasPrefix(show.UI.ResourceSHA256, "sha256:") || !show.ModelVisible() {
		t.Fatalf("show's UI: %+v", show.UI)
	}
	if refresh.UI == nil || !refresh.UI.Legacy || refresh.ModelVisible() || refresh.UI.ResourceSHA256 != show.UI.ResourceSHA256 {
		t.Fatalf("refresh's UI: %+v", refresh.UI)
	}
	res, digest, err := fx.m.ReadResource(context.Background(), "s", "ui://app/view.html")
	if err != nil || digest != show.UI.ResourceSHA256 || res.Contents[0].Text != "<html>v1</html>" {
		t.Fatalf("ReadResource: %v %q", err, digest)
	}
	out := call(fx.m, show, nil)
	var meta struct {
		Meta struct {
			UI struct {
				ResourceURI string `json:"resourceUri"`
			} `json:"ui"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(out.MCPResult, &meta); err != nil || meta.Meta.UI.ResourceURI != "ui://s/app/view.html" {
		t.Errorf("call result's resourceUri: %s", out.MCPResult)
	}

	// A changed resource is a changed definition.
	before, _ := json.Marshal(show.Definition)
	html.Store("<html>v2</html>")
	fx.m.Refresh("s")
	eventually(t, "the new digest", func() bool { return find(t, fx.m, "s/show").UI.ResourceSHA256 != show.UI.ResourceSHA256 })
	after, _ := json.Marshal(find(t, fx.m, "s/show").Definition)
	if string(before) == string(after) {
		t.Error("the definition did not change with the resource")
	}
	// The pinned definition brings back the pinned digest.
	pinned, err := mcpclient.Redefine(find(t, fx.m, "s/show"), before)
	if err != nil || pinned.UI == nil || pinned.UI.ResourceSHA256 != show.UI.ResourceSHA256 {
		t.Errorf("Redefine: %v %+v", err, pinned)
	}
}
