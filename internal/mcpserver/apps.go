package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// MCP Apps through /mcp (SEP-1865 "MCP Apps", ext-apps specification
// 2026-01-26; docs/mcp.md "MCP Apps"): a tool's ui:// resource is listed
// under the gateway's name for it (toolrouter.GatewayUIURI), and
// resources/read of that name reads the backend's resource, for a client
// that sees a tool naming it, and only while its content is the one
// pinned with the tool's definition.

// Resources reads the resources of MCP servers (mcpclient.Manager).
type Resources interface {
	// ReadResource reads uri on server, and digests its contents as
	// toolrouter.AppUI.ResourceSHA256 does.
	ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, string, error)
}

// uiMeta is the _meta of a listed tool with a UI: its ui (resourceUri
// under the gateway's name, visibility) and, when the server used it, the
// deprecated flat key.
func uiMeta(t *toolrouter.Tool, meta mcp.Meta) {
	ui := t.UI
	if ui == nil {
		return
	}
	m := map[string]any{}
	if ui.ResourceURI != "" {
		uri := toolrouter.GatewayUIURI(t.MCPServer, ui.ResourceURI)
		m["resourceUri"] = uri
		if ui.Legacy {
			meta["ui/resourceUri"] = uri
		}
	}
	if ui.Visibility != nil {
		m["visibility"] = ui.Visibility
	}
	meta["ui"] = m
}

// readResource answers resources/read of a ui:// resource under the
// gateway's name; a resource no tool the client sees names is -32602
// (the code 2026-07-28 gives an unknown resource). Any other read is the
// SDK's (next).
func (h *Handler) readResource(ctx context.Context, next mcp.MethodHandler, req mcp.Request, c *access.Client) (mcp.Result, error) {
	r, ok := req.(*mcp.ReadResourceRequest)
	if !ok || r.Params == nil || h.d.Resources == nil {
		return next(ctx, "resources/read", req)
	}
	uri := r.Params.URI
	server, backend, ok := toolrouter.ParseGatewayUIURI(uri)
	if !ok {
		return next(ctx, "resources/read", req)
	}
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resource not found: " + uri}
	var pinned *toolrouter.AppUI
	for _, t := range h.d.Tools().Tools() {
		if t.UI == nil || t.MCPServer != server || t.UI.ResourceURI != backend {
			continue
		}
		if c != nil && !h.visible(c, t.Name) {
			continue
		}
		pinned = t.UI
		break
	}
	if pinned == nil {
		return nil, notFound
	}
	res, digest, err := h.d.Resources.ReadResource(ctx, server, backend)
	if err != nil {
		return nil, readError(req, err)
	}
	if pinned.ResourceSHA256 != "" && digest != pinned.ResourceSHA256 {
		// Changed since its tools were pinned: served again once the
		// change is approved (its tools are quarantined meanwhile).
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resource " + uri + " changed since it was reviewed; it is quarantined until an approver accepts the change (GET /approvals)"}
	}
	for _, ct := range res.Contents {
		if ct != nil && ct.URI == backend {
			ct.URI = uri
		}
	}
	return h.readResult(req, res), nil
}

// readResult is a relayed resources/read result as toolrouterd answers it:
// the backend's contents (and _meta), with the result fields of the
// caller's revision (2026-07-28: resultType "complete", and ttlMs and
// cacheScope "private", since what a client may read is its own).
type readResult struct {
	mcp.ResultBase
	ResultType string                  `json:"resultType,omitempty"`
	TTLMs      *int                    `json:"ttlMs,omitempty"`
	CacheScope string                  `json:"cacheScope,omitempty"`
	Contents   []*mcp.ResourceContents `json:"contents"`
}

func (h *Handler) readResult(req mcp.Request, res *mcp.ReadResourceResult) mcp.Result {
	out := &readResult{Contents: res.Contents}
	out.Meta = res.Meta
	if ss, _ := req.GetSession().(*mcp.ServerSession); modernSession(ss) {
		ttl := int(h.d.ListTTL / time.Millisecond)
		out.ResultType, out.TTLMs, out.CacheScope = "complete", &ttl, "private"
	}
	return out
}
