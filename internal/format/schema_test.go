package format_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Name rules of testdata's name_rules.json.
var (
	strictName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`)
	mcpName    = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
)

var testNames = []string{"test/echo", "get_weather", strings.Repeat("n", 100), "a.b:c", "1st tool", "天気"}

func weatherTool(name string) *toolrouter.Tool {
	return &toolrouter.Tool{
		Name:        name,
		Description: "Get the weather",
		Kind:        toolrouter.KindTool,
		InputSchema: map[string]any{
			"$schema":              "https://json-schema.org/draft/2020-12/schema",
			"type":                 "object",
			"additionalProperties": false,
			"properties": map[string]any{
				"city":  map[string]any{"type": "string", "description": "City name"},
				"units": map[string]any{"type": "string", "enum": []any{"c", "f"}},
			},
			"required": []any{"city"},
		},
	}
}

// chatCompletionTool compiles testdata/openai-subset.schema.json's
// ChatCompletionTool.
func chatCompletionTool(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile("testdata/openai-subset.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://toolrouterd.test/openai-subset.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url + "#/components/schemas/ChatCompletionTool")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func asInstance(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestOpenAIDefinitionValidates(t *testing.T) {
	t.Parallel()
	sch := chatCompletionTool(t)
	// The schema must be able to reject a definition.
	if err := sch.Validate(asInstance(t, map[string]any{"type": "tool", "function": map[string]any{}})); err == nil {
		t.Fatal("ChatCompletionTool accepted a broken definition; the test would prove nothing")
	}
	for _, name := range testNames {
		for _, tool := range []*toolrouter.Tool{weatherTool(name), {Name: name}} {
			d := format.Definition(toolrouter.FormatOpenAI, tool, 0)
			if err := sch.Validate(asInstance(t, d)); err != nil {
				t.Errorf("%q: definition %v does not validate: %v", name, d, err)
			}
			fn := d["function"].(map[string]any)
			got := fn["name"].(string)
			if !strictName.MatchString(got) {
				t.Errorf("%q exported as %q, which OpenAI rejects", name, got)
			}
			if got != toolrouter.ExportName(toolrouter.FormatOpenAI, name) {
				t.Errorf("%q exported as %q, not its alias", name, got)
			}
			params := fn["parameters"].(map[string]any)
			if params["type"] != "object" {
				t.Errorf("%q: parameters %v have no type object", name, params)
			}
			if _, ok := params["properties"].(map[string]any); !ok {
				t.Errorf("%q: parameters %v have no properties", name, params)
			}
		}
	}
}

func TestDefinitionNames(t *testing.T) {
	t.Parallel()
	rules := map[toolrouter.Format]*regexp.Regexp{
		toolrouter.FormatOpenAI:    strictName,
		toolrouter.FormatAnthropic: strictName,
		toolrouter.FormatBedrock:   strictName,
		toolrouter.FormatGemini:    geminiName,
		toolrouter.FormatMCP:       mcpName,
	}
	for _, name := range testNames {
		for _, f := range format.SchemaFormats() {
			d := format.Definition(f, weatherTool(name), 0)
			got := definitionName(d)
			if re, ok := rules[f]; ok {
				if !re.MatchString(got) {
					t.Errorf("%s: %q exported as %q, which breaks %s", f, name, got, re)
				}
			} else if got != name {
				t.Errorf("%s: %q exported as %q, want the canonical name", f, name, got)
			}
		}
	}
	// Names a rule accepts are kept.
	if got := definitionName(format.Definition(toolrouter.FormatGemini, weatherTool("a.b:c"), 0)); got != "a.b:c" {
		t.Errorf("gemini renamed a.b:c to %q", got)
	}
	if got := definitionName(format.Definition(toolrouter.FormatOpenAI, weatherTool("get_weather"), 0)); got != "get_weather" {
		t.Errorf("openai renamed get_weather to %q", got)
	}
}

func definitionName(d map[string]any) string {
	if fn, ok := d["function"].(map[string]any); ok {
		return fn["name"].(string)
	}
	if spec, ok := d["toolSpec"].(map[string]any); ok {
		return spec["name"].(string)
	}
	return d["name"].(string)
}

func definitionDescription(d map[string]any) string {
	if fn, ok := d["function"].(map[string]any); ok {
		d = fn
	}
	if spec, ok := d["toolSpec"].(map[string]any); ok {
		d = spec
	}
	s, _ := d["description"].(string)
	return s
}

func TestDefinitionTruncatesDescription(t *testing.T) {
	t.Parallel()
	for _, desc := range []string{strings.Repeat("word ", 60), strings.Repeat("é☀", 80)} {
		tool := weatherTool("test/echo")
		tool.Description = desc
		for _, f := range format.SchemaFormats() {
			got := definitionDescription(format.Definition(f, tool, 50))
			if n := utf8.RuneCountInString(got); n != 50 || !utf8.ValidString(got) || !strings.HasPrefix(desc, got) {
				t.Errorf("%s: description cut to %d runes %q, want the first 50", f, n, got)
			}
			if got := definitionDescription(format.Definition(f, tool, 0)); got != desc {
				t.Errorf("%s: maxDesc 0 changed the description", f)
			}
			if got := definitionDescription(format.Definition(f, tool, 1000)); got != desc {
				t.Errorf("%s: a long limit changed the description", f)
			}
		}
	}
}

func TestTruncateBoundary(t *testing.T) {
	t.Parallel()
	tool := &toolrouter.Tool{Name: "x"}
	for _, tt := range []struct {
		desc string
		max  int
		want string
	}{
		{strings.Repeat("a", 51), 50, strings.Repeat("a", 50)},
		{strings.Repeat("a", 50), 50, strings.Repeat("a", 50)},
		{"ab", 1, "a"},
		{"éa", 1, "é"},
		{"☀☀", 2, "☀☀"},
		{"", 1, ""},
	} {
		tool.Description = tt.desc
		if got := definitionDescription(format.Definition(toolrouter.FormatAnthropic, tool, tt.max)); got != tt.want {
			t.Errorf("%q cut to %d = %q, want %q", tt.desc, tt.max, got, tt.want)
		}
	}
}

func TestCheckMaxDescription(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, -1} {
		wantInvalid(t, format.CheckMaxDescription(n), "max_description_length", "max_description_length must be >= 1")
	}
	if err := format.CheckMaxDescription(1); err != nil {
		t.Errorf("CheckMaxDescription(1) = %v", err)
	}
}

// TestSeedSchemas ports seed 000's schema normalization scenarios.
func TestSeedSchemas(t *testing.T) {
	t.Parallel()
	tool := &toolrouter.Tool{Name: "test/echo", Description: "Echo tool"}
	for f, key := range map[toolrouter.Format]string{
		toolrouter.FormatAnthropic: "input_schema",
		toolrouter.FormatLangChain: "args_schema",
		toolrouter.FormatUnknown:   "input_schema",
	} {
		d := format.Definition(f, tool, 0)
		if _, ok := d[key]; !ok {
			t.Errorf("%s definition %v has no %q", f, d, key)
		}
	}
	d := format.Definition(toolrouter.FormatOpenAI, tool, 0)
	fn := d["function"].(map[string]any)
	if _, ok := fn["parameters"]; !ok {
		t.Errorf("openai definition %v has no parameters", d)
	}
	// The seed expects the name "test/echo"; OpenAI rejects "/", so the
	// contract exports the deterministic alias instead.
	if fn["name"] != toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo") {
		t.Errorf("openai name = %v", fn["name"])
	}
	if got := format.Definition(toolrouter.FormatLangChain, tool, 0)["name"]; got != "test/echo" {
		t.Errorf("langchain name = %v, want test/echo", got)
	}
}

func TestDefinitionShapes(t *testing.T) {
	t.Parallel()
	tool := &toolrouter.Tool{Name: "get_weather", Description: "Weather", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}
	const schema = `{"type":"object","properties":{"city":{"type":"string"}}}`
	tests := []struct {
		f    toolrouter.Format
		tool *toolrouter.Tool
		want string
	}{
		{toolrouter.FormatOpenAI, tool, `{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":` + schema + `}}`},
		{toolrouter.FormatAnthropic, tool, `{"name":"get_weather","description":"Weather","input_schema":` + schema + `}`},
		{toolrouter.FormatUnknown, tool, `{"name":"get_weather","description":"Weather","input_schema":` + schema + `}`},
		{toolrouter.FormatLangChain, tool, `{"name":"get_weather","description":"Weather","args_schema":` + schema + `}`},
		{toolrouter.FormatGemini, tool, `{"name":"get_weather","description":"Weather","parameters":` + schema + `}`},
		{toolrouter.FormatBedrock, tool, `{"toolSpec":{"name":"get_weather","description":"Weather","inputSchema":{"json":` + schema + `}}}`},
		{toolrouter.FormatMCP, tool, `{"name":"get_weather","description":"Weather","inputSchema":` + schema + `}`},
		// nil schema defaults to an empty object schema
		{toolrouter.FormatOpenAI, &toolrouter.Tool{Name: "now"}, `{"type":"function","function":{"name":"now","description":"","parameters":{"type":"object","properties":{}}}}`},
		{toolrouter.FormatAnthropic, &toolrouter.Tool{Name: "now", Description: "d"}, `{"name":"now","description":"d","input_schema":{"type":"object","properties":{}}}`},
		// Gemini rejects an OBJECT without properties: no parameters at all.
		{toolrouter.FormatGemini, &toolrouter.Tool{Name: "now", Description: "d"}, `{"name":"now","description":"d"}`},
		// Bedrock rejects an empty description.
		{toolrouter.FormatBedrock, &toolrouter.Tool{Name: "now"}, `{"toolSpec":{"name":"now","inputSchema":{"json":{"type":"object","properties":{}}}}}`},
		// MCP: outputSchema only when it is an object JSON Schema.
		{toolrouter.FormatMCP, &toolrouter.Tool{Name: "v", Kind: toolrouter.KindValidation, OutputSchema: map[string]any{"mode": "strict"}},
			`{"name":"v","description":"","inputSchema":{"type":"object","properties":{}}}`},
		{toolrouter.FormatMCP, &toolrouter.Tool{Name: "v", OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}},
			`{"name":"v","description":"","inputSchema":{"type":"object","properties":{}},"outputSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.f)+"/"+tt.tool.Name, func(t *testing.T) {
			jsonEqual(t, format.Definition(tt.f, tt.tool, 0), tt.want)
		})
	}
	if format.Definition(toolrouter.FormatOpenAI, nil, 0) != nil {
		t.Error("Definition of a nil tool is not nil")
	}
}

func TestGeminiSchemaSanitized(t *testing.T) {
	t.Parallel()
	tool := &toolrouter.Tool{Name: "register", InputSchema: decode(t, `{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id": "https://example.com/register",
		"title": "Register",
		"additionalProperties": false,
		"strict": true,
		"$defs": {"addr": {"type": "object"}},
		"properties": {
			"name": {"type": "string", "minLength": 1, "examples": ["Ann"], "format": "email"},
			"when": {"type": "string", "format": "date-time"},
			"kind": {"const": "person"},
			"level": {"type": "integer", "enum": [1, 2, 3]},
			"size": {"type": "string", "enum": ["s", "m"]},
			"nick": {"type": ["string", "null"]},
			"address": {"$ref": "#/$defs/addr"},
			"tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 5, "uniqueItems": true},
			"meta": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "unevaluatedProperties": false,
			         "properties": {"score": {"type": "number", "format": "double", "minimum": 0, "exclusiveMaximum": 1}}},
			"either": {"oneOf": [{"type": "string"}, {"type": "integer", "additionalProperties": false}]},
			"both": {"anyOf": [{"type": "string"}], "oneOf": [{"type": "integer"}]}
		},
		"required": ["name"]
	}`).(map[string]any)}
	before := roundTrip(t, tool.InputSchema)
	d := format.Definition(toolrouter.FormatGemini, tool, 0)
	jsonEqual(t, d["parameters"], `{
		"type": "object",
		"title": "Register",
		"properties": {
			"name": {"type": "string", "minLength": 1},
			"when": {"type": "string", "format": "date-time"},
			"kind": {"type": "string", "enum": ["person"]},
			"level": {"type": "integer"},
			"size": {"type": "string", "enum": ["s", "m"]},
			"nick": {"type": "string", "nullable": true},
			"address": {},
			"tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 5},
			"meta": {"type": "object", "properties": {"score": {"type": "number", "format": "double", "minimum": 0}}},
			"either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
			"both": {"anyOf": [{"type": "string"}]}
		},
		"required": ["name"]
	}`)
	if !reflect.DeepEqual(roundTrip(t, tool.InputSchema), before) {
		t.Error("Definition changed the tool's InputSchema")
	}
}

// TestDefinitionDoesNotShareSchema checks that definitions are copies: no
// format may change the tool, and changing a definition must not either.
func TestDefinitionDoesNotShareSchema(t *testing.T) {
	t.Parallel()
	for _, f := range format.SchemaFormats() {
		tool := weatherTool("test/echo")
		tool.InputSchema = map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}}
		tool.OutputSchema = map[string]any{"type": "object", "properties": map[string]any{}}
		before := roundTrip(t, []any{tool.InputSchema, tool.OutputSchema})
		d := format.Definition(f, tool, 0)
		scrub(d)
		if after := roundTrip(t, []any{tool.InputSchema, tool.OutputSchema}); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: tool schemas changed to %v", f, after)
		}
	}
}

// scrub writes into every map of v.
func scrub(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			scrub(e)
		}
		x["scrubbed"] = true
	case []any:
		for _, e := range x {
			scrub(e)
		}
	}
}
