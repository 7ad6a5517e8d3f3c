package mcpserver

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A federated list (tools/list, skills/list) is one list across every
// backend, sorted by its items' names, and pages with one opaque cursor:
// the name of the last item served, encoded. A cursor holds no position
// in any backend's own listing, so it survives a reload and any replica
// reads it; an item added or removed between two pages is or is not on
// a later page by its name, never served twice (docs/mcp.md "Errors and
// lists").

// cursorPrefix versions the cursor's encoding.
const cursorPrefix = "trc1:"

// encodeCursor is the cursor that resumes after the item named last.
func encodeCursor(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + last))
}

// decodeCursor is the name a cursor resumes after; an unreadable cursor
// is invalid params, as the specification asks ("Pagination": "Invalid
// cursors SHOULD result in an error with code -32602").
func decodeCursor(cursor string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
	}
	return strings.TrimPrefix(string(b), cursorPrefix), nil
}

// pageOf is the page of items (sorted by name) that cursor ("" for the
// first) leads to, at most size long, and the cursor of the next page
// ("" when this is the last).
func pageOf[T any](items []T, name func(T) string, cursor string, size int) ([]T, string, error) {
	start := 0
	if cursor != "" {
		after, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		for start < len(items) && name(items[start]) <= after {
			start++
		}
	}
	end := min(start+size, len(items))
	page := items[start:end]
	if end == len(items) {
		return page, "", nil
	}
	return page, encodeCursor(name(page[len(page)-1])), nil
}

// listTools answers tools/list: the SDK's whole list (its own paging is
// off: Deps.PageSize), only the tools client c sees (all of them on an
// open service), paged (pageOf).
func (h *Handler) listTools(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request, c *access.Client) (mcp.Result, error) {
	h.Sync()
	cursor := ""
	if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil {
		cursor = r.Params.Cursor
		p := *r.Params
		p.Cursor = ""
		r2 := *r
		r2.Params = &p
		req = &r2
	}
	res, err := next(ctx, method, req)
	lr, ok := res.(*mcp.ListToolsResult)
	if err != nil || !ok {
		return res, err
	}
	kept := lr.Tools[:0:0]
	for _, t := range lr.Tools {
		name, _ := t.Meta[MetaToolName].(string)
		if c != nil && !h.visible(c, name) {
			continue // the client sees only its tools
		}
		kept = append(kept, t)
	}
	lr.Tools, lr.NextCursor, err = pageOf(kept, func(t *mcp.Tool) string { return t.Name }, cursor, h.d.PageSize)
	if err != nil {
		return nil, err
	}
	return lr, nil
}

// instruct sets the server's instructions (Deps.Instructions) on an
// initialize or server/discover result.
// It also declares the resources capability while a tool has an MCP
// Apps UI (its ui:// resource is read through resources/read, apps.go),
// so a server without one declares what it always did.
func (h *Handler) instruct(res mcp.Result) {
	var text string
	if h.d.Instructions != nil {
		text = h.d.Instructions()
	}
	var caps *mcp.ServerCapabilities
	switch r := res.(type) {
	case *mcp.InitializeResult:
		r.Instructions, caps = text, r.Capabilities
	case *mcp.DiscoverResult:
		r.Instructions, caps = text, r.Capabilities
	}
	if caps == nil {
		return
	}
	ui, skills := h.hasUI()
	if (ui || skills) && caps.Resources == nil {
		caps.Resources = &mcp.ResourceCapabilities{}
	}
	if skills {
		if caps.Extensions == nil {
			caps.Extensions = map[string]any{}
		}
		settings := map[string]any{}
		if h.directoryRead() { // resources/directory/read (directory.go)
			settings["directoryRead"] = true
		}
		caps.Extensions[skillsExtension] = settings
	}
}

// hasUI reports whether a tool in force has an MCP Apps UI, and whether
// a skill is in force.
func (h *Handler) hasUI() (ui, skills bool) {
	if h.d.Resources == nil {
		return false, false
	}
	for _, t := range h.d.Tools().Tools() {
		ui = ui || t.UI != nil && t.UI.ResourceURI != ""
		skills = skills || t.Kind == toolrouter.KindSkill
	}
	return ui, skills
}
