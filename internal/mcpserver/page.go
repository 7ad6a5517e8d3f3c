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

// invalidCursor answers a cursor toolrouterd did not make for the list.
var invalidCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}

// pageOf is the page of items (sorted by name) that cursor ("" for the
// first) leads to, at most size long, and the cursor of the next page
// ("" when this is the last).
func pageOf[T any](items []T, name func(T) string, cursor string, size int) ([]T, string, error) {
	after := ""
	if cursor != "" {
		var err error
		if after, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
		if strings.Contains(after, "\x00") {
			return nil, "", invalidCursor // another list's (pageOfList)
		}
	}
	page, next := pageAfter(items, name, cursor != "", after, size)
	return page, next, nil
}

// pageOfList is pageOf for a list other than tools/list and skills/list
// (resources, templates, prompts, a directory): its cursors also name the
// list, so that a cursor of one list is refused by any other.
func pageOfList[T any](list string, items []T, name func(T) string, cursor string, size int) ([]T, string, error) {
	after := ""
	if cursor != "" {
		var err error
		if after, err = decodeCursor(cursor); err != nil {
			return nil, "", err
		}
		if !strings.HasPrefix(after, list+"\x00") {
			return nil, "", invalidCursor
		}
	}
	page, next := pageAfter(items, func(t T) string { return list + "\x00" + name(t) }, cursor != "", after, size)
	return page, next, nil
}

// pageAfter is the page of items (sorted by name) after the item named
// after (from the first when !resume), and the next page's cursor.
func pageAfter[T any](items []T, name func(T) string, resume bool, after string, size int) ([]T, string) {
	start := 0
	if resume {
		for start < len(items) && name(items[start]) <= after {
			start++
		}
	}
	end := min(start+size, len(items))
	page := items[start:end]
	if end == len(items) {
		return page, ""
	}
	return page, encodeCursor(name(page[len(page)-1]))
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
	for _, k := range h.catalogs() { // catalog.go
		if (len(k.Resources) > 0 || len(k.Templates) > 0) && caps.Resources == nil {
			caps.Resources = &mcp.ResourceCapabilities{}
		}
		if len(k.Prompts) > 0 && caps.Prompts == nil {
			caps.Prompts = &mcp.PromptCapabilities{}
		}
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
