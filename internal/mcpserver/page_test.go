package mcpserver_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/mcpserver"
)

// TestToolsListPages: tools/list pages with one opaque cursor over the
// whole list (Deps.PageSize), each tool once, in name order, on both
// protocol eras; an unreadable cursor is -32602.
func TestToolsListPages(t *testing.T) {
	e := newEnv(t, func(d *mcpserver.Deps) { d.PageSize = 2 })
	for _, so := range []*mcp.ClientSessionOptions{legacy, nil} {
		cs := connectVersion(t, e.url, nil, so)
		var names []string
		cursor, pages := "", 0
		for {
			res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(res.Tools) > 2 {
				t.Fatalf("page of %d tools, want at most 2", len(res.Tools))
			}
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		if len(names) != 5 || pages != 3 || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != 5 {
			t.Errorf("paged list: %d pages, %v", pages, names)
		}
		if len(listTools(t, cs)) != 5 { // the SDK's iterator follows the cursor
			t.Error("iterator did not follow the cursor")
		}
		_, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "not a cursor"})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("bad cursor: %v", err)
		}
	}
}

// TestInstructions: Deps.Instructions is the initialize result's
// instructions (and server/discover's under 2026-07-28), read on each
// request.
func TestInstructions(t *testing.T) {
	text := "Use file_bug for bugs."
	e := newEnv(t, func(d *mcpserver.Deps) { d.Instructions = func() string { return text } })
	if got := connect(t, e.url, nil).InitializeResult().Instructions; got != text {
		t.Errorf("initialize instructions %q", got)
	}
	text = "changed"
	if got := connectVersion(t, e.url, nil, nil).InitializeResult().Instructions; got != text {
		t.Errorf("server/discover instructions %q", got)
	}
}
