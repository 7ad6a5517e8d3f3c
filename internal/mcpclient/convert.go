package mcpclient

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by MCP 2026-07-28 (SEP-2577) and still served to servers of the older revisions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/inputschema"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// discovered is one tool of a server's last successful tools/list, kept
// as the server described it so that the registry tools can be rebuilt
// when only the server's prefix, allowlist or timeout change.
type discovered struct {
	tool *mcp.Tool
	// input and output are the tool's schemas as JSON objects; validate
	// checks arguments against input (nil when it does not compile).
	input, output map[string]any
	validate      func(map[string]any) error
	schemaErr     error
	// validateOut checks structuredContent against output; nil when the
	// tool has no output schema or it does not compile (then the schema
	// is not advertised either, see registryTool).
	validateOut func(map[string]any) error
	// skill is set when the item is a skill (skills.go).
	skill *toolrouter.Skill
}

// newDiscovered decodes a tool's schemas and compiles its input schema
// like the registry compiles those of file tools.
func newDiscovered(t *mcp.Tool) discovered {
	d := discovered{tool: t}
	d.input, _ = jsonObject(t.InputSchema)
	if d.input == nil {
		d.input = map[string]any{"type": "object"}
	}
	d.output, _ = jsonObject(t.OutputSchema)
	d.validate, d.schemaErr = inputschema.Validator(d.input)
	if d.output != nil {
		d.validateOut, _ = inputschema.Validator(d.output)
		if d.validateOut == nil {
			d.output = nil // advertised only with outputs checked against it
		}
	}
	return d
}

// jsonObject turns a schema the SDK decoded (a map, a json.RawMessage or a
// typed schema) into a JSON object; nil when it is absent or no object.
func jsonObject(v any) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// allowed reports whether the allowlist lets a server's tool in.
func allowed(allow []string, name string) bool {
	return slices.Contains(allow, "*") || slices.Contains(allow, name)
}

// registryTool is the registry tool of a discovered MCP tool.
func registryTool(cfg toolrouter.MCPServer, d discovered) *toolrouter.Tool {
	t := &toolrouter.Tool{
		Name:         cfg.Prefix + d.tool.Name,
		Description:  d.tool.Description,
		Kind:         toolrouter.KindTool,
		InputSchema:  d.input,
		OutputSchema: d.output,
		Timeout:      cfg.Timeout,
		Circuit:      cfg.Circuit,
		MCPServer:    cfg.Name,
		MCPTool:      d.tool.Name,
		ValidateArgs: d.validate,
		Definition:   definitionOf(d.tool),
		Budget:       cfg.Budget,
		Task:         cfg.Task,
		UI:           appUI(d.tool.Meta),
		Price:        cfg.Price,
	}
	if d.skill != nil {
		return skillTool(t, d)
	}
	if b, ok := cfg.ToolBudgets[d.tool.Name]; ok {
		t.Budget = b.Tighter(cfg.Budget)
	}
	if pr, ok := cfg.ToolPrices[d.tool.Name]; ok {
		t.Price = pr // one tool's own price wins over its server's (docs/costs.md)
	}
	if d.validateOut != nil {
		validate := d.validateOut
		t.ValidateOutput = func(out any) error {
			obj, ok := out.(map[string]any)
			if !ok {
				return fmt.Errorf("structuredContent is %s, not an object", toolrouter.JSONKind(out))
			}
			return validate(obj)
		}
	}
	if t.Description == "" {
		t.Description = d.tool.Title
	}
	if a := d.tool.Annotations; a != nil {
		if t.Description == "" {
			t.Description = a.Title
		}
		t.ReadOnly = a.ReadOnlyHint
		// An idempotent tool may be called again when the first request may
		// or may not have reached it (a connection lost mid-call).
		t.Idempotent = a.IdempotentHint
		if t.Idempotent {
			t.Retries = 1
		}
	}
	return t
}

// definition is what a tool's pin digests (docs/trusting-tools.md "Pinned definitions"):
// the tool as its server lists it, but for _meta and icons.
type definition struct {
	Name         string               `json:"name"`
	Title        string               `json:"title,omitempty"`
	Description  string               `json:"description,omitempty"`
	InputSchema  any                  `json:"inputSchema,omitempty"`
	OutputSchema any                  `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
	// Meta is the MCP Apps part of _meta (the UI resource, its digest and
	// the tool's visibility: apps.go); absent for tools without a UI.
	Meta mcp.Meta `json:"_meta,omitempty"`
}

func definitionOf(t *mcp.Tool) definition {
	return definition{Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations, Meta: uiMeta(t.Meta)}
}

// Redefine returns tool t, a tool of an MCP server, as it would be had
// its server listed def (a Definition, as JSON) instead: what serves a
// pinned definition while the server lists another.
func Redefine(t *toolrouter.Tool, def json.RawMessage) (*toolrouter.Tool, error) {
	if t.Kind == toolrouter.KindSkill {
		return redefineSkill(t, def)
	}
	var mt mcp.Tool
	if err := json.Unmarshal(def, &mt); err != nil {
		return nil, fmt.Errorf("tool %s: pinned definition: %w", t.Name, err)
	}
	// What the registry sets on the tool, not its server, stays: its
	// timeout, circuit, output budget and price (issue 32 item 12: a keep_old
	// tool served its whole output over a 1,024-byte budget).
	cfg := toolrouter.MCPServer{Name: t.MCPServer, Prefix: strings.TrimSuffix(t.Name, t.MCPTool), Timeout: t.Timeout,
		Circuit: t.Circuit, Budget: t.Budget, Price: t.Price}
	return registryTool(cfg, newDiscovered(&mt)), nil
}

// outcome turns a tools/call result into the router's Outcome: a result
// with isError is a failure the tool reported (classified by its text);
// otherwise the output is structuredContent when present, else the text
// content (as JSON when it is JSON, else as a JSON string), else the
// content blocks themselves. The result itself travels along as MCPResult
// for the /mcp endpoint to pass on unchanged. A tool with an output schema
// must answer structuredContent that matches it: anything else is a
// schema failure naming the mismatch (docs/mcp.md "MCP both ways").
func outcome(t *toolrouter.Tool, res *mcp.CallToolResult) toolrouter.Outcome {
	if res == nil {
		return toolrouter.Outcome{Output: json.RawMessage("null"), Answered: true}
	}
	if res.NeedsInput() {
		// Only an /mcp caller can answer it (mcpserver relays the result);
		// for everyone else the call failed (docs/mcp.md "Elicitation through the
		// gateway (multi round-trip requests)").
		return toolrouter.Outcome{Err: needsInputMessage(res), Category: toolrouter.CategoryExecution,
			Answered: true, MCPResult: encodeResult(res)}
	}
	text, hasText := textOf(res.Content)
	if res.IsError {
		return toolError(text, encodeResult(res))
	}
	if out, ok := checkOutput(t, res.StructuredContent != nil, func() (any, error) { return decodeAny(res.StructuredContent) }); !ok {
		return out
	}
	out := toolrouter.Outcome{Answered: true, MCPResult: encodeResult(res)}
	switch {
	case res.StructuredContent != nil:
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return toolrouter.Outcome{Err: fmt.Sprintf("the MCP tool's structuredContent cannot be encoded: %v", err),
				Category: toolrouter.CategoryParse, Answered: true}
		}
		out.Output = raw
	case hasText:
		out.Output = textOutput(text)
	case len(res.Content) == 0:
		out.Output = json.RawMessage("null")
	default:
		raw, err := json.Marshal(res.Content)
		if err != nil {
			return toolrouter.Outcome{Err: fmt.Sprintf("the MCP tool's content cannot be encoded: %v", err),
				Category: toolrouter.CategoryParse, Answered: true}
		}
		out.Output = raw
	}
	return out
}

// toolError is the outcome of a result with isError: its text, as the
// error, classified (execution when nothing more specific fits).
func toolError(text string, result json.RawMessage) toolrouter.Outcome {
	msg := strings.TrimSpace(text)
	if msg == "" {
		msg = "the MCP tool reported an error without a message"
	}
	cat := toolrouter.ClassifyError(msg)
	if cat == toolrouter.CategoryUnknown {
		cat = toolrouter.CategoryExecution
	}
	return toolrouter.Outcome{Err: msg, Category: cat, Answered: true, MCPResult: result}
}

// checkOutput holds a result to t's outputSchema, if t declares one:
// present says the result has structuredContent, decode gives it. It
// returns the schema failure and false when the result does not satisfy it.
func checkOutput(t *toolrouter.Tool, present bool, decode func() (any, error)) (toolrouter.Outcome, bool) {
	if t == nil || t.ValidateOutput == nil {
		return toolrouter.Outcome{}, true
	}
	if !present {
		return toolrouter.Outcome{Err: "the MCP tool's result has no structuredContent although the tool declares an outputSchema",
			Category: toolrouter.CategorySchema, Answered: true}, false
	}
	sc, err := decode()
	if err == nil {
		err = t.ValidateOutput(sc)
	}
	if err != nil {
		return toolrouter.Outcome{Err: "the MCP tool's structuredContent does not match its outputSchema: " + err.Error(),
			Category: toolrouter.CategorySchema, Answered: true}, false
	}
	return toolrouter.Outcome{}, true
}

// needsInputMessage is the failure of a call the backend answered with an
// input_required result (multi round-trip requests, protocol 2026-07-28),
// naming the input it asks for.
func needsInputMessage(res *mcp.CallToolResult) string {
	var kinds []string
	for _, ir := range res.InputRequests {
		k := "input"
		switch ir.(type) {
		case *mcp.ElicitParams:
			k = "elicitation"
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			k = "sampling"
		case *mcp.ListRootsParams:
			k = "roots"
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return "the MCP server asks to retry the call later (input_required without input requests); call it over /mcp"
	}
	slices.Sort(kinds)
	return "the tool asks for input (" + strings.Join(kinds, ", ") + "); call it over /mcp with protocol 2026-07-28"
}

// encodeResult is res as JSON (every field the SDK decoded); nil if it
// cannot be encoded.
func encodeResult(res *mcp.CallToolResult) json.RawMessage {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil
	}
	return raw
}

// decodeAny turns a value the SDK decoded into plain JSON values (maps,
// slices, float64s), which the schema validator expects.
func decodeAny(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(raw, &out)
	return out, err
}

// textOf joins the text blocks of a result's content with newlines.
func textOf(content []mcp.Content) (string, bool) {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0
}

// textOutput is text as a JSON value: the text itself when it is a JSON
// document, else the text as a JSON string.
func textOutput(text string) json.RawMessage {
	trimmed := bytes.TrimSpace([]byte(text))
	if len(trimmed) > 0 && json.Valid(trimmed) {
		var buf bytes.Buffer
		if json.Compact(&buf, trimmed) == nil {
			return buf.Bytes()
		}
	}
	raw, _ := json.Marshal(text) // a string always encodes
	return raw
}
