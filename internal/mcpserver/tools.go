package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Sync makes the server's tool list that of the registry in force. Tools
// whose definition changed are replaced, and connected sessions get
// notifications/tools/list_changed when anything changed. It is cheap when
// the registry did not change; tools/list calls it, and the owner of the
// registry should call it after a reload so sessions hear of the change.
func (h *Handler) Sync() {
	h.mu.Lock()
	defer h.mu.Unlock()
	tools := h.d.Tools().Tools()
	if h.exported != nil && slices.Equal(tools, h.last) {
		return // registries are immutable: same tools, same definitions
	}
	want := make([]*mcp.Tool, 0, len(tools))
	defs := make(map[string]string, len(tools))
	for _, t := range tools {
		if t.Kind == toolrouter.KindSkill {
			continue // a skill is listed by skills/list (skills.go)
		}
		mt := definition(t)
		if _, dup := defs[mt.Name]; dup {
			continue // the registry rejects colliding names; be safe anyway
		}
		b, err := json.Marshal(mt)
		if err != nil {
			h.d.Logger.Error().Err(err).Str("tool", t.Name).Msg("tool definition is not JSON; not listed")
			continue
		}
		defs[mt.Name] = string(b)
		want = append(want, mt)
	}
	var gone []string
	for name := range h.exported {
		if _, ok := defs[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		h.srv.RemoveTools(gone...)
	}
	for _, mt := range want {
		if h.exported[mt.Name] == defs[mt.Name] {
			continue
		}
		if err := h.addTool(mt); err != nil {
			h.d.Logger.Error().Err(err).Str("tool", mt.Name).Msg("tool not listed")
			delete(defs, mt.Name)
		}
	}
	h.exported, h.last = defs, tools
	// The fast path leaves calls of these to the SDK, which checks their
	// Mcp-Param-* headers (fastcall.go).
	h.paramHeaders = map[string]bool{}
	for name, def := range defs {
		if strings.Contains(def, "x-mcp-header") {
			h.paramHeaders[name] = true
		}
	}
}

// addTool adds or replaces a tool, turning the SDK's panic on a schema it
// rejects into an error.
func (h *Handler) addTool(mt *mcp.Tool) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	// Calls never reach this handler (intercept answers them all); it is
	// there because the SDK wants one.
	h.srv.AddTool(mt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h.call(ctx, req)
		out, _ := res.(*mcp.CallToolResult)
		return out, err
	})
	return nil
}

// definition is the MCP Tool of a registry tool.
func definition(t *toolrouter.Tool) *mcp.Tool {
	def := format.Definition(toolrouter.FormatMCP, t, 0)
	name, _ := def["name"].(string)
	mt := &mcp.Tool{
		Name:        name,
		Description: t.Description,
		InputSchema: def["inputSchema"],
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.ReadOnly, IdempotentHint: t.Idempotent},
		Meta:        mcp.Meta{MetaToolName: t.Name},
	}
	uiMeta(t, mt.Meta)
	if name != t.Name {
		mt.Title = t.Name
	}
	if t.Title != "" {
		mt.Title = t.Title
	}
	if h := t.Hints; h != nil { // a virtual server's annotations
		a := mt.Annotations
		if h.ReadOnly != nil {
			a.ReadOnlyHint = *h.ReadOnly
		}
		if h.Idempotent != nil {
			a.IdempotentHint = *h.Idempotent
		}
		a.DestructiveHint, a.OpenWorldHint = h.Destructive, h.OpenWorld
	}
	// An output schema is advertised only when outputs are checked
	// against it and never cut (MCP clients reject results that do not
	// match): an output budget may shape an output into something the
	// schema does not admit (docs/output-budgets.md "Output budgets").
	if out, ok := def["outputSchema"]; ok && t.ValidateOutput != nil && t.Budget.IsZero() {
		mt.OutputSchema = out
	}
	return mt
}
