package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/suggest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
	"github.com/toolrouterd/toolrouterd/internal/vserver"
)

type exportedTool struct {
	Name           string         `json:"name"`
	ExportedName   string         `json:"exported_name"`
	ToolType       string         `json:"tool_type"`
	ValidationMode string         `json:"validation_mode,omitempty"`
	Definition     map[string]any `json:"definition"`
}

func handleSchemas(tools func() Tools, views func() *vserver.Set) http.HandlerFunc {
	valid := make([]string, 0, 8)
	for _, f := range format.SchemaFormats() {
		valid = append(valid, string(f))
	}
	return func(w http.ResponseWriter, r *http.Request) {
		name := pathParam(r, "provider")
		f, ok := format.ParseFormat(name)
		if !ok {
			msg := "provider: unknown provider " + strconv.Quote(name) + "; "
			if s, ok := suggest.Closest(name, valid); ok {
				msg += "did you mean " + strconv.Quote(s) + "? "
			}
			writeError(w, r, &toolrouter.Error{Code: toolrouter.ENOTFOUND, Field: "provider",
				Message: msg + "valid: " + strings.Join(valid, ", ")})
			return
		}
		maxDesc := 0
		if q := r.URL.Query().Get("max_description_length"); q != "" {
			n, err := strconv.Atoi(q)
			if err == nil {
				err = format.CheckMaxDescription(n)
			}
			if err != nil {
				writeError(w, r, toolrouter.Invalid("max_description_length", "max_description_length: must be an integer >= 1, got %q", q))
				return
			}
			maxDesc = n
		}
		// The client sees only its tools; definitions are made as they are
		// written, not all at once.
		client := access.FromContext(r.Context())
		var list []*toolrouter.Tool
		v, err := requestView(views, r)
		if err != nil { // its server removed by a reload since checkView
			v = vserver.Empty()
		}
		if v != nil {
			list = v.Tools(client) // a virtual server's (or search mode's) view
		} else {
			for _, t := range tools().Tools() {
				if client.Allows(t.Name) {
					list = append(list, t)
				}
			}
		}
		// An MCP Apps tool for its app only is never offered to a model
		// (docs/mcp.md "MCP Apps").
		list = slices.DeleteFunc(list, func(t *toolrouter.Tool) bool { return !t.ModelVisible() })
		encode(w, r, http.StatusOK, map[string]any{"provider": string(f), "tools": exportList{f: f, tools: list, maxDesc: maxDesc}})
	}
}

// exportList is the tools of /schemas/{provider}, each exported when it is
// encoded.
type exportList struct {
	f       toolrouter.Format
	tools   []*toolrouter.Tool
	maxDesc int
}

func (l exportList) Len() int { return len(l.tools) }

func (l exportList) Item(i int) any {
	t := l.tools[i]
	return exportedTool{
		Name:           t.Name,
		ExportedName:   toolrouter.ExportName(l.f, t.Name),
		ToolType:       string(t.Kind),
		ValidationMode: validationMode(t),
		Definition:     format.Definition(l.f, t, l.maxDesc),
	}
}

func validationMode(t *toolrouter.Tool) string {
	if t.Kind != toolrouter.KindValidation {
		return ""
	}
	return t.ValidationMode()
}
