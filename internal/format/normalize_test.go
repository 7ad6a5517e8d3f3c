package format_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestFixtures checks all real payloads of testdata/toolcalls.json. The
// fixture labels Gemini and Bedrock wrappers "unknown"; the contract names
// them gemini and bedrock, and the contract wins.
func TestFixtures(t *testing.T) {
	t.Parallel()
	fs := loadFixtures(t)
	if len(fs) != 66 {
		t.Fatalf("%d fixtures, want 66", len(fs))
	}
	for _, fx := range fs {
		t.Run(fx.ID, func(t *testing.T) {
			want := toolrouter.Format(fx.Format)
			m, _ := fx.ToolCall.(map[string]any)
			if _, ok := m["functionCall"]; ok {
				want = toolrouter.FormatGemini
			}
			if _, ok := m["toolUse"]; ok {
				want = toolrouter.FormatBedrock
			}
			if got := format.Detect(fx.ToolCall); got != want {
				t.Errorf("Detect = %q, want %q", got, want)
			}
			c, err := format.Normalize(fx.ToolCall)
			if err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			if c.ToolName != fx.Expect.ToolName {
				t.Errorf("ToolName = %q, want %q", c.ToolName, fx.Expect.ToolName)
			}
			if c.Format != want {
				t.Errorf("Format = %q, want %q", c.Format, want)
			}
			if !reflect.DeepEqual(any(c.Arguments), fx.Expect.Arguments) {
				t.Errorf("Arguments = %#v\nwant %#v", c.Arguments, fx.Expect.Arguments)
			}
		})
	}
}

// TestNormalizeGolden covers shapes and details the fixtures do not.
func TestNormalizeGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload string
		as      toolrouter.Format // "" means Normalize (detect)
		format  toolrouter.Format
		tool    string
		args    string
		id      string
		extra   map[string]any
	}{
		{
			name:    "mcp tools/call request, numeric id",
			payload: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Paris"}}}`,
			format:  toolrouter.FormatMCP, tool: "get_weather", args: `{"city":"Paris"}`, id: "7",
			extra: map[string]any{"jsonrpc_id": 7.0},
		},
		{
			name:    "mcp tools/call request, string id, no arguments, _meta",
			payload: `{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"name":"list_files","_meta":{"progressToken":1}}}`,
			format:  toolrouter.FormatMCP, tool: "list_files", args: `{}`, id: "req-1",
			extra: map[string]any{"jsonrpc_id": "req-1"},
		},
		{
			name:    "mcp large numeric id is not rendered in exponent form",
			payload: `{"jsonrpc":"2.0","id":12345678901,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
			format:  toolrouter.FormatMCP, tool: "x", args: `{}`, id: "12345678901",
			extra: map[string]any{"jsonrpc_id": 12345678901.0},
		},
		{
			name:    "gemini part with thoughtSignature",
			payload: `{"functionCall":{"id":"fc-1","name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"CtcBAdHtim9sig=="}`,
			format:  toolrouter.FormatGemini, tool: "get_weather", args: `{"city":"Paris"}`, id: "fc-1",
			extra: map[string]any{"thoughtSignature": "CtcBAdHtim9sig=="},
		},
		{
			name:    "openai arguments with a name key",
			payload: `{"id":"call_1","type":"function","function":{"name":"mcp-add","arguments":"{\"name\":\"arxiv\",\"activate\":true}"}}`,
			format:  toolrouter.FormatOpenAI, tool: "mcp-add", args: `{"name":"arxiv","activate":true}`, id: "call_1",
		},
		{
			name:    "openai flattened arguments with a name key",
			payload: `{"name":"greet","arguments":{"name":"Alice"}}`,
			format:  toolrouter.FormatOpenAI, tool: "greet", args: `{"name":"Alice"}`,
		},
		{
			name:    "unicode name and arguments, escaped and raw",
			payload: `{"id":"call_ü","function":{"name":"天気","arguments":"{\"city\":\"Zürich\",\"sky\":\"\\u2600 🌤\",\"note\":\"naïve — ok\"}"}}`,
			format:  toolrouter.FormatOpenAI, tool: "天気", args: `{"city":"Zürich","sky":"☀ 🌤","note":"naïve — ok"}`, id: "call_ü",
		},
		{
			name:    "responses item answers by call_id",
			payload: `{"type":"function_call","id":"fc_1","call_id":"call_9","name":"calc","arguments":"{\"a\":1}"}`,
			format:  toolrouter.FormatOpenAI, tool: "calc", args: `{"a":1}`, id: "call_9",
			extra: map[string]any{"openai_api": "responses"},
		},
		{
			name:    "arguments string null with whitespace",
			payload: `{"id":"c","function":{"name":"now","arguments":"  null\n"}}`,
			format:  toolrouter.FormatOpenAI, tool: "now", args: `{}`, id: "c",
		},
		{
			name:    "whitespace-only arguments string",
			payload: `{"name":"now","arguments":" \n\t "}`,
			format:  toolrouter.FormatOpenAI, tool: "now", args: `{}`,
		},
		{
			name:    "arguments JSON text null-decoded stays {}",
			payload: `{"name":"now","arguments":null}`,
			format:  toolrouter.FormatOpenAI, tool: "now", args: `{}`,
		},
		{
			name:    "anthropic input as a JSON string",
			payload: `{"type":"tool_use","id":"toolu_1","name":"memory","input":"{\"path\":\"/m\"}"}`,
			format:  toolrouter.FormatAnthropic, tool: "memory", args: `{"path":"/m"}`, id: "toolu_1",
		},
		{
			name:    "anthropic null input",
			payload: `{"type":"tool_use","id":"toolu_2","name":"ping","input":null}`,
			format:  toolrouter.FormatAnthropic, tool: "ping", args: `{}`, id: "toolu_2",
		},
		{
			name:    "anthropic-like block with toolUseId",
			payload: `{"type":"tool_use","toolUseId":"tooluse_1","name":"w","input":{"a":1}}`,
			format:  toolrouter.FormatAnthropic, tool: "w", args: `{"a":1}`, id: "tooluse_1",
		},
		{
			name:    "bedrock toolUse block",
			payload: `{"toolUse":{"toolUseId":"tooluse_k","name":"top_song","input":{"sign":"WZPZ"}}}`,
			format:  toolrouter.FormatBedrock, tool: "top_song", args: `{"sign":"WZPZ"}`, id: "tooluse_k",
		},
		{
			name:    "bare bedrock ToolUseBlock forced",
			payload: `{"toolUseId":"tooluse_k","name":"top_song","input":{"sign":"WZPZ"}}`,
			as:      toolrouter.FormatBedrock,
			format:  toolrouter.FormatBedrock, tool: "top_song", args: `{"sign":"WZPZ"}`, id: "tooluse_k",
		},
		{
			name:    "bare gemini FunctionCall forced",
			payload: `{"name":"read_theme"}`,
			as:      toolrouter.FormatGemini,
			format:  toolrouter.FormatGemini, tool: "read_theme", args: `{}`,
		},
		{
			name:    "langchain null args",
			payload: `{"name":"m","args":null,"id":"1","type":"tool_call"}`,
			format:  toolrouter.FormatLangChain, tool: "m", args: `{}`, id: "1",
		},
		{
			name:    "llama name/parameters is unknown",
			payload: `{"type":"function","name":"trending_songs","parameters":{"n":"10"}}`,
			format:  toolrouter.FormatUnknown, tool: "trending_songs", args: `{"n":"10"}`,
		},
		{
			name:    "unknown takes id or call_id",
			payload: `{"name":"x","call_id":"c-1","params":{"q":1}}`,
			format:  toolrouter.FormatUnknown, tool: "x", args: `{"q":1}`, id: "c-1",
		},
		{
			name:    "unknown format forced on an unknown format name",
			payload: `{"name":"x","input":{"q":1}}`,
			as:      toolrouter.Format("nonsense"),
			format:  toolrouter.FormatUnknown, tool: "x", args: `{"q":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := decode(t, tt.payload)
			var (
				c   toolrouter.Call
				err error
			)
			if tt.as == "" {
				if got := format.Detect(p); got != tt.format {
					t.Errorf("Detect = %q, want %q", got, tt.format)
				}
				c, err = format.Normalize(p)
			} else {
				c, err = format.NormalizeAs(p, tt.as)
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Format != tt.format || c.ToolName != tt.tool || c.ProviderCallID != tt.id {
				t.Errorf("format/name/id = %q/%q/%q, want %q/%q/%q",
					c.Format, c.ToolName, c.ProviderCallID, tt.format, tt.tool, tt.id)
			}
			if want := decode(t, tt.args); !reflect.DeepEqual(any(c.Arguments), want) {
				t.Errorf("Arguments = %#v, want %#v", c.Arguments, want)
			}
			if len(c.Extra) != 0 || len(tt.extra) != 0 {
				if !reflect.DeepEqual(c.Extra, tt.extra) {
					t.Errorf("Extra = %#v, want %#v", c.Extra, tt.extra)
				}
			}
		})
	}
}

// TestSeedDetect ports seed 000's "Detect ..." scenarios.
func TestSeedDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload any
		want    toolrouter.Format
	}{
		{"openai from arguments string", decode(t, `{"name":"test/echo","arguments":"{\"key\": \"value\"}"}`), toolrouter.FormatOpenAI},
		{"anthropic from input dict", decode(t, `{"name":"test/echo","input":{"key":"value"}}`), toolrouter.FormatAnthropic},
		{"langchain from type tool_call", decode(t, `{"name":"test/echo","type":"tool_call","args":{"key":"value"}}`), toolrouter.FormatLangChain},
		{"langchain from args key", decode(t, `{"name":"test/echo","args":{}}`), toolrouter.FormatLangChain},
		{"unknown from empty payload", map[string]any{}, toolrouter.FormatUnknown},
		{"openai with dict arguments", decode(t, `{"name":"test/echo","arguments":{"a":1}}`), toolrouter.FormatOpenAI},
		{"non-dict string", "not a dict", toolrouter.FormatUnknown},
		{"non-dict list", []any{map[string]any{"name": "x", "arguments": "{}"}}, toolrouter.FormatUnknown},
		{"non-dict number", 42.0, toolrouter.FormatUnknown},
		{"non-dict nil", nil, toolrouter.FormatUnknown},
		{"anthropic from type only", decode(t, `{"type":"tool_use","name":"x"}`), toolrouter.FormatAnthropic},
		{"langchain from type only", decode(t, `{"type":"tool_call","name":"x"}`), toolrouter.FormatLangChain},
		{"function that is not an object", decode(t, `{"function":"f","name":"x"}`), toolrouter.FormatUnknown},
		{"functionCall that is not an object", decode(t, `{"functionCall":"f","name":"x","args":{}}`), toolrouter.FormatLangChain},
		{"jsonrpc other method", decode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), toolrouter.FormatUnknown},
		{"arguments wins over input", decode(t, `{"name":"x","arguments":"{}","input":{}}`), toolrouter.FormatOpenAI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := format.Detect(tt.payload); got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSeedNormalize ports seed 000's "Normalize ..." scenarios.
func TestSeedNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload string
		as      toolrouter.Format
		tool    string
		key     string
		format  toolrouter.Format
	}{
		{"openai payload", `{"name":"test/echo","arguments":"{\"key\": \"value\"}"}`, "", "test/echo", "key", toolrouter.FormatOpenAI},
		{"anthropic payload", `{"name":"test/echo","input":{"msg":"hello"}}`, "", "test/echo", "msg", toolrouter.FormatAnthropic},
		{"langchain payload", `{"name":"test/echo","type":"tool_call","args":{"data":42}}`, "", "test/echo", "data", toolrouter.FormatLangChain},
		{"unknown format with dict parameters", `{"name":"test/echo","parameters":{"x":1}}`, "", "test/echo", "x", toolrouter.FormatUnknown},
		{"openai with dict arguments", `{"name":"test/echo","arguments":{"msg":"hi"}}`, toolrouter.FormatOpenAI, "test/echo", "msg", toolrouter.FormatOpenAI},
		{"langchain with dict args", `{"name":"test/echo","args":{"msg":"hi"},"id":"call_1","type":"tool_call"}`, toolrouter.FormatLangChain, "test/echo", "msg", toolrouter.FormatLangChain},
		{"unknown with parameters key", `{"name":"search","parameters":{"query":"go"}}`, toolrouter.FormatUnknown, "search", "query", toolrouter.FormatUnknown},
		{"unknown with JSON string args", `{"name":"store","args":"{\"data\":[1,2]}"}`, toolrouter.FormatUnknown, "store", "data", toolrouter.FormatUnknown},
		{"unknown bad JSON skips to next key", `{"name":"x","arguments":"{not json","input":{"ok":true}}`, toolrouter.FormatUnknown, "x", "ok", toolrouter.FormatUnknown},
		{"unknown non-object JSON string skips", `{"name":"x","arguments":"[1]","params":"{\"ok\":1}"}`, toolrouter.FormatUnknown, "x", "ok", toolrouter.FormatUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := decode(t, tt.payload)
			var (
				c   toolrouter.Call
				err error
			)
			if tt.as == "" {
				c, err = format.Normalize(p)
			} else {
				c, err = format.NormalizeAs(p, tt.as)
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ToolName != tt.tool || c.Format != tt.format {
				t.Errorf("name/format = %q/%q, want %q/%q", c.ToolName, c.Format, tt.tool, tt.format)
			}
			if _, ok := c.Arguments[tt.key]; !ok {
				t.Errorf("Arguments %v have no key %q", c.Arguments, tt.key)
			}
		})
	}
}

func TestNormalizeUnknownNoArguments(t *testing.T) {
	t.Parallel()
	c, err := format.NormalizeAs(decode(t, `{"name":"x","arguments":"oops","args":5}`), toolrouter.FormatUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arguments == nil || len(c.Arguments) != 0 {
		t.Errorf("Arguments = %#v, want empty non-nil map", c.Arguments)
	}
}

func TestNormalizeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload any
		as      toolrouter.Format
		words   []string
	}{
		{"list payload", []any{}, "", []string{"payload must be a dict", "list"}},
		{"string payload", "x", "", []string{"payload must be a dict"}},
		{"nil payload", nil, "", []string{"payload must be a dict"}},
		{"number payload forced", 1.0, toolrouter.FormatOpenAI, []string{"payload must be a dict"}},
		{"no name", decode(t, `{"arguments":"{}"}`), "", []string{"name"}},
		{"empty payload", map[string]any{}, "", []string{"name"}},
		{"empty name", decode(t, `{"function":{"name":"","arguments":"{}"}}`), "", []string{"name"}},
		{"blank name", decode(t, `{"type":"tool_use","name":"  ","input":{}}`), "", []string{"name"}},
		{"non-string name", decode(t, `{"name":5,"args":{}}`), "", []string{"name"}},
		{"null name", decode(t, `{"name":null,"input":{}}`), "", []string{"name"}},
		{"gemini without name", decode(t, `{"functionCall":{"args":{}}}`), "", []string{"name"}},
		{"mcp without params", decode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`), "", []string{"name"}},
		{"invalid JSON arguments", decode(t, `{"name":"test/echo","arguments":"{not valid json"}`), "", []string{"parse error", "not valid JSON"}},
		{"truncated JSON arguments", decode(t, `{"function":{"name":"f","arguments":"{\"a\":"}}`), "", []string{"parse error"}},
		{"array arguments string", decode(t, `{"name":"f","arguments":"[1,2]"}`), "", []string{"parse error: arguments must be a JSON object"}},
		{"number arguments string", decode(t, `{"name":"f","arguments":"5"}`), "", []string{"parse error: arguments must be a JSON object"}},
		{"array arguments value", decode(t, `{"name":"f","arguments":[1]}`), "", []string{"parse error: arguments must be a JSON object"}},
		{"number arguments value", decode(t, `{"function":{"name":"f","arguments":5}}`), "", []string{"parse error: arguments must be a JSON object"}},
		{"anthropic list input", decode(t, `{"type":"tool_use","name":"f","input":[1]}`), "", []string{"parse error: arguments must be a JSON object"}},
		{"anthropic bad string input", decode(t, `{"type":"tool_use","name":"f","input":"{x"}`), "", []string{"parse error"}},
		{"gemini bad args", decode(t, `{"functionCall":{"name":"f","args":"nope"}}`), "", []string{"parse error"}},
		{"bedrock list input", decode(t, `{"toolUse":{"name":"f","input":[]}}`), "", []string{"parse error"}},
		{"mcp string arguments", decode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f","arguments":"x"}}`), "", []string{"parse error"}},
		{"langchain list args", decode(t, `{"name":"test/echo","args":[1,2,3],"id":"1"}`), toolrouter.FormatLangChain, []string{"must be a dict", "list"}},
		{"langchain string args", decode(t, `{"name":"f","args":"{}","type":"tool_call"}`), "", []string{"must be a dict", "str"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.as == "" {
				_, err = format.Normalize(tt.payload)
			} else {
				_, err = format.NormalizeAs(tt.payload, tt.as)
			}
			wantInvalid(t, err, "tool_call", tt.words...)
		})
	}
}

// A *toolrouter.Error must be returned as a non-nil error interface only
// on failure, and the normalization error must classify as parse.
func TestNormalizeErrorsClassifyAsParse(t *testing.T) {
	t.Parallel()
	for _, p := range []string{`{"arguments":"{}"}`, `{"name":"f","arguments":"{x"}`, `{"name":"f","args":[1]}`} {
		_, err := format.Normalize(decode(t, p))
		if err == nil {
			t.Fatalf("%s: no error", p)
		}
		if got := toolrouter.ClassifyError(err.Error()); got != toolrouter.CategoryParse {
			t.Errorf("%s: ClassifyError(%q) = %q, want parse", p, err, got)
		}
	}
}

func TestParseFormatAndSchemaFormats(t *testing.T) {
	t.Parallel()
	want := []toolrouter.Format{"openai", "anthropic", "langchain", "unknown", "gemini", "bedrock", "mcp"}
	got := format.SchemaFormats()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SchemaFormats = %v, want %v", got, want)
	}
	got[0] = "mutated"
	if format.SchemaFormats()[0] != "openai" {
		t.Error("SchemaFormats shares its slice with callers")
	}
	for _, f := range want {
		if p, ok := format.ParseFormat(string(f)); !ok || p != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, p, ok)
		}
	}
	for _, s := range []string{"", "OpenAI", "ollama", "openai "} {
		if _, ok := format.ParseFormat(s); ok {
			t.Errorf("ParseFormat(%q) accepted", s)
		}
	}
}

// TestDetectPrecedence puts the keys of two of Detect's rules in one
// payload, for every pair: the earlier rule wins. It pins the order the
// dialects are tried in (marked ones first, then the list's order).
func TestDetectPrecedence(t *testing.T) {
	t.Parallel()
	rules := []struct {
		keys string
		want toolrouter.Format
	}{
		{`"functionCall":{"name":"x"}`, toolrouter.FormatGemini},
		{`"toolUse":{"name":"x"}`, toolrouter.FormatBedrock},
		{`"jsonrpc":"2.0","method":"tools/call"`, toolrouter.FormatMCP},
		{`"function":{"name":"x"}`, toolrouter.FormatOpenAI},
		{`"arguments":"{}"`, toolrouter.FormatOpenAI},
		{`"input":{}`, toolrouter.FormatAnthropic},
		{`"type":"tool_use"`, toolrouter.FormatAnthropic},
		{`"args":{}`, toolrouter.FormatLangChain},
		{`"type":"tool_call"`, toolrouter.FormatLangChain},
	}
	for i, a := range rules {
		if got := format.Detect(decode(t, `{"name":"x",`+a.keys+`}`)); got != a.want {
			t.Errorf("{%s} = %s, want %s", a.keys, got, a.want)
		}
		for _, b := range rules[i+1:] {
			if strings.HasPrefix(a.keys, `"type"`) && strings.HasPrefix(b.keys, `"type"`) {
				continue // one key cannot hold both
			}
			for _, p := range []string{`{` + a.keys + `,` + b.keys + `}`, `{` + b.keys + `,` + a.keys + `}`} {
				if got := format.Detect(decode(t, p)); got != a.want {
					t.Errorf("%s = %s, want %s", p, got, a.want)
				}
			}
		}
	}
}
