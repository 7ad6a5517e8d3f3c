package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// head is a valid first tool; lines added after it start at line 4.
const head = "tools:\n  - name: t\n    endpoint: http://tools.example/t\n"

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func problems(t *testing.T, err error) registry.Problems {
	t.Helper()
	var ps registry.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %v (%T) is not registry.Problems", err, err)
	}
	return ps
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string // the whole error text, one problem a line
	}{
		// The file as a whole.
		{"not a mapping", "- a\n", `r.yaml:1: the registry must be a mapping with keys tools, providers, default_provider, mcp_servers, clients, virtual_servers, discovery, guardrails`},
		{"unknown top-level key", "tools: []\nbogus: 1\n", `r.yaml:2: bogus: unknown key`},
		{"duplicate top-level key", "tools: []\nproviders: []\ntools: []\n", `r.yaml:3: tools: duplicate key (first at line 1)`},
		{"syntax error", "tools:\n  - name: t\n    endpoint: \"http://x\n", `r.yaml:3: invalid YAML: found unexpected end of stream (a quote not closed?)`},
		{"two documents", "tools: []\n---\ntools: []\n", `r.yaml:3: only one YAML document is allowed`},
		{"tools not a list", "tools: {name: t}\n", `r.yaml:1: tools: must be a list`},
		{"tool not a mapping", "tools:\n  - t\n", `r.yaml:2: tools[0]: must be a mapping`},

		// Tool keys.
		{"unknown tool key", head + "    colour: blue\n", `r.yaml:4: tool "t": colour: unknown key`},
		{"duplicate tool key", head + "    endpoint: http://tools.example/u\n", `r.yaml:4: tool "t": endpoint: duplicate key (first at line 3)`},
		{"name missing", "tools:\n  - endpoint: http://tools.example/t\n", `r.yaml:2: tools[0].name: required`},
		{"name null", "tools:\n  - name:\n    endpoint: http://tools.example/t\n", `r.yaml:2: tools[0].name: required`},
		{"name not a string", "tools:\n  - name: [t]\n    endpoint: http://tools.example/t\n", `r.yaml:2: tools[0].name: must be a string`},
		{"name bad characters", "tools:\n  - name: test echo\n    endpoint: http://tools.example/t\n", `r.yaml:2: tool "test echo": name: must be 1-128 characters of A-Z a-z 0-9 / . _ -`},
		{"name too long", "tools:\n  - name: " + strings.Repeat("a", 129) + "\n    endpoint: http://tools.example/t\n", `r.yaml:2: tool "` + strings.Repeat("a", 129) + `": name: must be 1-128 characters of A-Z a-z 0-9 / . _ -`},
		{"duplicate name", head + "  - name: t\n    endpoint: http://tools.example/u\n", `r.yaml:4: tool "t": name: duplicate name (first at line 2)`},
		{"circuit not a mapping", head + "    circuit: 5\n", `r.yaml:4: tool "t": circuit: must be a mapping like {failures: 5, cooldown: 30s}`},
		{"circuit failures negative", head + "    circuit: {failures: -1}\n", `r.yaml:4: tool "t": circuit.failures: must be between 0 (off) and 1000`},
		{"circuit cooldown not a duration", head + "    circuit: {cooldown: soon}\n", `r.yaml:4: tool "t": circuit.cooldown: must be a duration string like 30s, got "soon"`},
		{"circuit unknown key", head + "    circuit: {failure: 3}\n", `r.yaml:4: tool "t": circuit.failure: unknown key (did you mean failures?)`},
		{"approval not required or none", head + "    approval: maybe\n", `r.yaml:4: tool "t": approval: must be required or none, got "maybe"`},
		{"description not a string", head + "    description: {a: b}\n", `r.yaml:4: tool "t": description: must be a string`},
		{"endpoint missing", "tools:\n  - name: t\n", `r.yaml:2: tool "t": endpoint: required`},
		{"endpoint relative", "tools:\n  - name: t\n    endpoint: /echo\n", `r.yaml:3: tool "t": endpoint: must be an absolute http or https URL with a host`},
		{"endpoint not http", "tools:\n  - name: t\n    endpoint: ftp://tools.example/t\n", `r.yaml:3: tool "t": endpoint: must be an absolute http or https URL with a host`},
		{"endpoint without host", "tools:\n  - name: t\n    endpoint: http:///t\n", `r.yaml:3: tool "t": endpoint: must be an absolute http or https URL with a host`},
		{"endpoint not a URL", "tools:\n  - name: t\n    endpoint: \"http://tools example/%zz\"\n", `r.yaml:3: tool "t": endpoint: must be an absolute http or https URL with a host`},
		{"kind unknown", head + "    kind: widget\n", `r.yaml:4: tool "t": kind: must be tool or validation, got "widget"`},

		// Schemas.
		{"input_schema not a mapping", head + "    input_schema: [a]\n", `r.yaml:4: tool "t": input_schema: must be a mapping`},
		{"input_schema type not object", head + "    input_schema:\n      type: array\n", `r.yaml:5: tool "t": input_schema/type: must be "object"`},
		{"input_schema bad type name", head + "    input_schema:\n      type: object\n      properties:\n        msg: {type: strng}\n",
			`r.yaml:7: tool "t": input_schema/properties/msg/type: invalid JSON Schema: "strng" is not a type (one of array, boolean, integer, null, number, object, string); did you mean "string"?`},
		// Issue 38: one message a place, on the line at fault.
		{"input_schema type misspelt", head + "    input_schema:\n      type: objekt\n", `r.yaml:5: tool "t": input_schema/type: must be "object"`},
		{"input_schema type list", head + "    input_schema:\n      properties:\n        n: {type: [strng]}\n",
			`r.yaml:6: tool "t": input_schema/properties/n/type/0: invalid JSON Schema: "strng" is not a type (one of array, boolean, integer, null, number, object, string); did you mean "string"?`},
		{"unclosed brace", head + "    input_schema: {type: object\n  - name: u\n    endpoint: http://x/u\n",
			`r.yaml:4: invalid YAML: did not find expected ',' or '}' (a '{' not closed?)`},
		{"unclosed bracket", head + "    tags: [a, b\n  - name: u\n", `r.yaml:4: invalid YAML: did not find expected ',' or ']' (a '[' not closed?)`},
		{"unclosed brace on line 1", "tools: {\n", `r.yaml:1: invalid YAML: did not find expected node content`},
		{"indented less", head + "   kind: tool\n", `r.yaml:4: invalid YAML: did not find expected '-' indicator (wrong indentation?)`},
		{"indented less, not last", head + "   kind: tool\n  - name: u\n    endpoint: http://x/u\n", `r.yaml:4: invalid YAML: did not find expected '-' indicator (wrong indentation?)`},
		{"indented as the list", head + "  kind: tool\n", `r.yaml:4: invalid YAML: did not find expected '-' indicator (wrong indentation?)`},
		{"indented more", head + "     kind: tool\n", `r.yaml:4: invalid YAML: mapping values are not allowed in this context (a key indented more than the one above it, or a value with ": " in it to quote?)`},
		{"quote not closed", head + "    description: \"the weather\n  - name: u\n    endpoint: http://x/u\n", `r.yaml:4: invalid YAML: found unexpected end of stream (a quote not closed?)`},
		{"single quote not closed", head + "    description: 'the weather\n", `r.yaml:4: invalid YAML: found unexpected end of stream (a quote not closed?)`},
		{"empty properties", head + "    input_schema:\n      type: object\n      properties:\n      city: {type: string}\n",
			`r.yaml:6: tool "t": input_schema/properties: invalid JSON Schema: got null, want object (it is empty: are the lines meant under it indented too little?)`},
		{"value with a colon", head + "    description: note: it rains\n", `r.yaml:4: invalid YAML: mapping values are not allowed in this context (a key indented more than the one above it, or a value with ": " in it to quote?)`},
		{"mapping indented less", "providers:\n  - name: p\n    kind: openai\nclients:\n  - name: c\n    tools: [x]\n key_env: K\n",
			`r.yaml:7: invalid YAML: did not find expected key (wrong indentation?)`},
		{"second document", head + "---\ntools: []\n", `r.yaml:5: only one YAML document is allowed`},
		{"input_schema bad keyword value", head + "    input_schema:\n      properties:\n        n:\n          minimum: ten\n",
			`r.yaml:7: tool "t": input_schema/properties/n/minimum: invalid JSON Schema: got string, want number`},
		{"input_schema bad regex", head + "    input_schema:\n      properties:\n        s: {pattern: \"(\"}\n",
			"r.yaml:6: tool \"t\": input_schema/properties/s/pattern: invalid JSON Schema: '(' is not valid regex: error parsing regexp: missing closing ): `(`"},
		{"input_schema external ref", head + "    input_schema:\n      $ref: other.json\n",
			`r.yaml:5: tool "t": input_schema: invalid JSON Schema: cannot load "/other.json": input_schema must be self-contained (no external $ref or $schema)`},
		{"input_schema dangling ref", head + "    input_schema:\n      $ref: \"#/$defs/nope\"\n",
			`r.yaml:5: tool "t": input_schema: invalid JSON Schema: json-pointer in "input_schema#/$defs/nope" not found`},
		{"input_schema duplicate key", head + "    input_schema:\n      type: object\n      type: object\n",
			`r.yaml:6: tool "t": input_schema/type: duplicate key (first at line 5)`},
		{"input_schema infinite number", head + "    input_schema:\n      properties:\n        n: {maximum: .inf}\n",
			`r.yaml:6: tool "t": input_schema/properties/n/maximum: must be a finite number`},
		{"output_schema not a mapping", head + "    output_schema: strict\n", `r.yaml:4: tool "t": output_schema: must be a mapping`},

		// Timeouts.
		{"timeout a list", head + "    timeout: [1]\n", `r.yaml:4: tool "t": timeout: must be a string`},
		{"timeout no unit", head + "    timeout: 30\n", `r.yaml:4: tool "t": timeout: must be a duration string like 30s, got "30"`},
		{"timeout garbage", head + "    timeout: soon\n", `r.yaml:4: tool "t": timeout: must be a duration string like 30s, got "soon"`},
		{"timeout zero", head + "    timeout: 0s\n", `r.yaml:4: tool "t": timeout: must be greater than 0`},
		{"timeout negative", head + "    timeout: -1s\n", `r.yaml:4: tool "t": timeout: must be greater than 0`},
		{"timeout too long", head + "    timeout: 10m1s\n", `r.yaml:4: tool "t": timeout: must be at most 10m`},

		// Headers.
		{"headers a list", head + "    headers: [a]\n", `r.yaml:4: tool "t": headers: must be a mapping of header names to strings`},
		{"header value a list", head + "    headers:\n      X-A: [1]\n", `r.yaml:5: tool "t": headers.X-A: must be a string`},
		{"header value null", head + "    headers:\n      X-A:\n", `r.yaml:5: tool "t": headers.X-A: must be a string`},
		{"header bad name", head + "    headers:\n      X A: b\n", `r.yaml:5: tool "t": headers.X A: invalid header name`},
		{"header duplicate by case", head + "    headers:\n      X-A: b\n      x-a: c\n", `r.yaml:6: tool "t": headers.x-a: duplicate header (first at line 5)`},
		{"header variable unset", head + "    headers:\n      Authorization: Bearer ${NOPE}\n", `r.yaml:5: tool "t": headers.Authorization: environment variable NOPE is unset or empty`},
		{"header variable empty", head + "    headers:\n      Authorization: Bearer ${EMPTY}\n", `r.yaml:5: tool "t": headers.Authorization: environment variable EMPTY is unset or empty`},
		{"header two variables unset", head + "    headers:\n      X-A: ${ONE}:${TWO}\n",
			"r.yaml:5: tool \"t\": headers.X-A: environment variable ONE is unset or empty\n" +
				`r.yaml:5: tool "t": headers.X-A: environment variable TWO is unset or empty`},
		{"header variable unterminated", head + "    headers:\n      X-A: ${TOKEN\n", `r.yaml:5: tool "t": headers.X-A: unterminated ${`},
		{"header variable bad name", head + "    headers:\n      X-A: ${1X}\n", `r.yaml:5: tool "t": headers.X-A: invalid variable name "1X"`},
		{"header control character", head + "    headers:\n      X-A: \"a\\nb\"\n", `r.yaml:5: tool "t": headers.X-A: value must not contain control characters`},
		{"header control character from env", head + "    headers:\n      X-A: ${NEWLINE}\n", `r.yaml:5: tool "t": headers.X-A: value must not contain control characters`},

		// Idempotence and retries.
		{"idempotent a string", head + "    idempotent: \"true\"\n", `r.yaml:4: tool "t": idempotent: must be true or false`},
		{"idempotent yes", head + "    idempotent: yes\n", `r.yaml:4: tool "t": idempotent: must be true or false`},
		{"retries a string", head + "    retries: many\n", `r.yaml:4: tool "t": retries: must be an integer`},
		{"retries a float", head + "    retries: 1.5\n", `r.yaml:4: tool "t": retries: must be an integer`},
		{"retries negative", head + "    retries: -1\n", `r.yaml:4: tool "t": retries: must be between 0 and 10`},
		{"retries too many", head + "    idempotent: true\n    retries: 11\n", `r.yaml:5: tool "t": retries: must be between 0 and 10`},
		{"retries without idempotent", head + "    retries: 2\n", `r.yaml:4: tool "t": retries: retries require idempotent: true`},
		{"retries with idempotent false", head + "    idempotent: false\n    retries: 1\n", `r.yaml:5: tool "t": retries: retries require idempotent: true`},

		// Providers.
		{"providers not a list", "providers: local\n", `r.yaml:1: providers: must be a list`},
		{"provider unknown key", "providers:\n  - name: p\n    kind: openai\n    model: m\n    api_key: sk-123\n", `r.yaml:5: providers[0].api_key: unknown key`},
		{"provider required fields", "providers:\n  - base_url: http://llm.example/v1\n",
			"r.yaml:2: providers[0].name: required\n" +
				"r.yaml:2: providers[0].kind: required\n" +
				`r.yaml:2: providers[0].model: required`},
		{"provider duplicate name", "providers:\n  - {name: p, kind: openai, model: m}\n  - {name: p, kind: ollama, model: m}\n", `r.yaml:3: providers[1].name: duplicate name (first at line 2)`},
		{"provider bad kind", "providers:\n  - {name: p, kind: gpt, model: m}\n", `r.yaml:2: providers[0].kind: must be openai, openai-responses, anthropic, gemini, bedrock or ollama, got "gpt"`},
		{"provider bad base_url", "providers:\n  - {name: p, kind: openai, model: m, base_url: \"localhost:11434\"}\n", `r.yaml:2: providers[0].base_url: must be an absolute http or https URL with a host`},
		{"provider api_key_env holds a key", "providers:\n  - {name: p, kind: openai, model: m, api_key_env: sk-abc}\n", `r.yaml:2: providers[0].api_key_env: must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself`},
		{"bedrock without region", "providers:\n  - {name: p, kind: bedrock, model: anthropic.claude-3-5-haiku-20241022-v1:0}\n", `r.yaml:2: providers[0].region: required for kind bedrock: the AWS region of the model, such as us-east-1`},
		{"bedrock bad region", "providers:\n  - {name: p, kind: bedrock, model: m, region: US East}\n", `r.yaml:2: providers[0].region: must be an AWS region such as us-east-1, got "US East"`},
		{"bedrock api_key_env", "providers:\n  - {name: p, kind: bedrock, model: m, region: us-east-1, api_key_env: AWS_KEY}\n", `r.yaml:2: providers[0].api_key_env: kind bedrock takes AWS credentials from the SDK's default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity, ECS or EC2 roles), not api_key_env`},
		{"region on gemini", "providers:\n  - {name: p, kind: gemini, model: gemini-2.5-flash, region: us-east-1}\n", `r.yaml:2: providers[0].region: only kind bedrock takes a region`},
		{"default_provider unknown", "providers:\n  - {name: p, kind: openai, model: m}\ndefault_provider: q\n", `r.yaml:3: default_provider: no provider named "q"`},
		{"default_provider without providers", "default_provider: q\n", `r.yaml:1: default_provider: no provider named "q"`},
		{"default_provider a list", "default_provider: [q]\n", `r.yaml:1: default_provider: must be a string`},

		// MCP servers.
		{"mcp server bad root", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    roots: [/data]\n", `r.yaml:4: mcp_servers[0].roots[0]: must be a file:// URI`},
		{"mcp server pin not a bool", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    pin: sometimes\n", `r.yaml:4: mcp_servers[0].pin: must be true or false`},
		{"mcp server pin_new bad", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    pin_new: deny\n", `r.yaml:4: mcp_servers[0].pin_new: must be quarantine or allow, got "deny"`},
		{"mcp server on_change bad", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    on_change: follow\n", `r.yaml:4: mcp_servers[0].on_change: must be quarantine or keep_old, got "follow"`},
		{"mcp server on_change unpinned", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    pin: false\n    on_change: keep_old\n", `r.yaml:5: mcp_servers[0].on_change: only for a pinned server (pin: true)`},
		{"mcp server unknown key", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    transport: sse\n", `r.yaml:4: mcp_servers[0].transport: unknown key`},
		{"mcp server required fields", "mcp_servers:\n  - prefix: f/\n",
			"r.yaml:2: mcp_servers[0].name: required\n" +
				`r.yaml:2: mcp_servers[0].url: required (or command, for a stdio server)`},
		{"mcp server url and command", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    command: [mcp-files]\n", `r.yaml:4: mcp_servers[0].command: url and command exclude each other: a server is either remote (url) or a stdio process (command)`},
		{"mcp server env without command", "mcp_servers:\n  - name: f\n    url: http://mcp.example/mcp\n    env: {A: b}\n", `r.yaml:4: mcp_servers[0].env: only for a stdio server (command)`},
		{"mcp server empty command", "mcp_servers:\n  - {name: f, command: []}\n", `r.yaml:2: mcp_servers[0].command: must list the program and its arguments, e.g. [npx, -y, "@modelcontextprotocol/server-memory"]`},
		{"mcp server command a string", "mcp_servers:\n  - {name: f, command: \"npx server\"}\n", `r.yaml:2: mcp_servers[0].command: must be a list`},
		{"mcp server command item not a string", "mcp_servers:\n  - name: f\n    command: [npx, {a: b}]\n", `r.yaml:3: mcp_servers[0].command[1]: must be a string`},
		{"mcp server env unset", "mcp_servers:\n  - name: f\n    command: [mcp-memory]\n    env:\n      MEMORY_FILE_PATH: ${MEMORY_DIR}/m.json\n", `r.yaml:5: mcp_servers[0].env.MEMORY_FILE_PATH: environment variable MEMORY_DIR is unset or empty`},
		{"mcp server env bad name", "mcp_servers:\n  - name: f\n    command: [mcp-memory]\n    env: {\"A-B\": x}\n", `r.yaml:4: mcp_servers[0].env.A-B: invalid variable name`},
		{"mcp server cwd empty", "mcp_servers:\n  - {name: f, command: [mcp-memory], cwd: \"\"}\n", `r.yaml:2: mcp_servers[0].cwd: must be a directory path`},
		{"mcp server duplicate name", "mcp_servers:\n  - {name: f, url: \"http://mcp.example/a\"}\n  - {name: f, url: \"http://mcp.example/b\"}\n", `r.yaml:3: mcp_servers[1].name: duplicate name (first at line 2)`},
		{"mcp server bad url", "mcp_servers:\n  - {name: f, url: \"stdio:files\"}\n", `r.yaml:2: mcp_servers[0].url: must be an absolute http or https URL with a host`},
		{"mcp server bad prefix", "mcp_servers:\n  - {name: f, url: \"http://mcp.example/a\", prefix: \"f:\"}\n", `r.yaml:2: mcp_servers[0].prefix: must be characters of A-Z a-z 0-9 / . _ -`},
		{"mcp server tools not a list", "mcp_servers:\n  - {name: f, url: \"http://mcp.example/a\", tools: \"*\"}\n", `r.yaml:2: mcp_servers[0].tools: must be a list`},
		{"mcp server tool not a string", "mcp_servers:\n  - name: f\n    url: http://mcp.example/a\n    tools: [read, [write]]\n", `r.yaml:4: mcp_servers[0].tools[1]: must be a string`},
		{"mcp server header unset", "mcp_servers:\n  - name: f\n    url: http://mcp.example/a\n    headers:\n      Authorization: Bearer ${FILES_TOKEN}\n", `r.yaml:5: mcp_servers[0].headers.Authorization: environment variable FILES_TOKEN is unset or empty`},
		{"mcp server bad timeout", "mcp_servers:\n  - name: f\n    url: http://mcp.example/a\n    timeout: 1h\n", `r.yaml:4: mcp_servers[0].timeout: must be at most 10m`},

		// Aliases reach another tool's canonical name.
		{"canonical name is an earlier tool's alias",
			"tools:\n  - name: test/echo\n    endpoint: http://tools.example/a\n  - name: " + toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo") + "\n    endpoint: http://tools.example/b\n",
			`r.yaml:4: tool "` + toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo") + `": name: is the openai alias of tool "test/echo"`},
		{"alias is an earlier tool's canonical name",
			"tools:\n  - name: " + toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo") + "\n    endpoint: http://tools.example/b\n  - name: test/echo\n    endpoint: http://tools.example/a\n",
			`r.yaml:4: tool "test/echo": name: its openai alias "` + toolrouter.ExportName(toolrouter.FormatOpenAI, "test/echo") + `" is the name of another tool`},
		{"gemini alias is an earlier tool's canonical name",
			"tools:\n  - name: " + toolrouter.ExportName(toolrouter.FormatGemini, "9lives") + "\n    endpoint: http://tools.example/b\n  - name: 9lives\n    endpoint: http://tools.example/a\n",
			`r.yaml:4: tool "9lives": name: its gemini alias "` + toolrouter.ExportName(toolrouter.FormatGemini, "9lives") + `" is the name of another tool`},
	}
	getenv := env("EMPTY", "", "NEWLINE", "a\r\nX-Injected: 1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := registry.Parse("r.yaml", []byte(tt.src), getenv)
			if err == nil {
				t.Fatalf("Parse succeeded (%d tools), want:\n%s", len(r.Tools()), tt.want)
			}
			if r != nil {
				t.Errorf("Parse returned a registry with its error")
			}
			if got := problems(t, err).Error(); got != tt.want {
				t.Errorf("problems:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestParseCollectsEveryProblem checks that a file with many faults lists
// all of them, in file order.
func TestParseCollectsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := registry.Load("testdata/bad_many.yaml", env())
	ps := problems(t, err)
	want := []string{
		`testdata/bad_many.yaml:3: tool "test/echo": endpoint: must be an absolute http or https URL with a host`,
		`testdata/bad_many.yaml:4: tool "test/echo": timeout: must be a string`,
		`testdata/bad_many.yaml:5: tool "test/echo": retries: retries require idempotent: true`,
		`testdata/bad_many.yaml:6: tool "test/echo": colour: unknown key`,
		`testdata/bad_many.yaml:7: tool "test/echo": name: duplicate name (first at line 2)`,
		`testdata/bad_many.yaml:10: tool "test/echo": input_schema/type: must be "object"`,
		`testdata/bad_many.yaml:11: tools[2].name: required`,
		`testdata/bad_many.yaml:11: tools[2].endpoint: required`,
		`testdata/bad_many.yaml:12: tool "bad name!": name: must be 1-128 characters of A-Z a-z 0-9 / . _ -`,
		`testdata/bad_many.yaml:14: tool "bad name!": kind: must be tool or validation, got "widget"`,
		`testdata/bad_many.yaml:16: tool "bad name!": headers.Authorization: environment variable MISSING_TOKEN is unset or empty`,
		`testdata/bad_many.yaml:18: providers[0].model: required`,
		`testdata/bad_many.yaml:19: providers[0].kind: must be openai, openai-responses, anthropic, gemini, bedrock or ollama, got "gpt"`,
		`testdata/bad_many.yaml:20: providers[0].base_url: must be an absolute http or https URL with a host`,
		`testdata/bad_many.yaml:21: providers[0].api_key_env: must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself`,
		`testdata/bad_many.yaml:22: default_provider: no provider named "nobody"`,
		`testdata/bad_many.yaml:23: extra: unknown key`,
	}
	if len(ps) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(ps), len(want), err)
	}
	for i := range min(len(ps), len(want)) {
		if got := ps[i].String(); got != want[i] {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	// The structured fields agree with the text.
	if p := ps[0]; p.File != "testdata/bad_many.yaml" || p.Line != 3 || p.Tool != "test/echo" || p.Field != "endpoint" {
		t.Errorf("first problem = %+v", p)
	}
	if got := strings.Count(err.Error(), "\n") + 1; got != len(ps) {
		t.Errorf("Error() has %d lines for %d problems", got, len(ps))
	}
}

func TestLoadSyntaxError(t *testing.T) {
	t.Parallel()
	_, err := registry.Load("testdata/bad_syntax.yaml", nil)
	if got, want := problems(t, err).Error(), "testdata/bad_syntax.yaml:3: invalid YAML: found unexpected end of stream (a quote not closed?)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := registry.Load("testdata/does-not-exist.yaml", nil)
	if err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
	var ps registry.Problems
	if errors.As(err, &ps) {
		t.Errorf("a missing file is reported as Problems: %v", err)
	}
}

func TestHeaderValueNeverPrinted(t *testing.T) {
	t.Parallel()
	src := head + "    headers:\n      Authorization: Bearer ${SECRET} ${MISSING}\n"
	_, err := registry.Parse("r.yaml", []byte(src), env("SECRET", "hunter2-very-secret"))
	if err == nil {
		t.Fatal("Parse succeeded with an unset variable")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("problem text shows a header value: %v", err)
	}
	if !strings.Contains(err.Error(), "MISSING") {
		t.Errorf("problem text does not name the variable: %v", err)
	}
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    registry.Problem
		want string
	}{
		{registry.Problem{File: "r.yaml", Line: 3, Tool: "x", Field: "timeout", Why: "bad"}, `r.yaml:3: tool "x": timeout: bad`},
		{registry.Problem{File: "r.yaml", Line: 3, Field: "extra", Why: "unknown key"}, `r.yaml:3: extra: unknown key`},
		{registry.Problem{File: "r.yaml", Why: "bad"}, `r.yaml: bad`},
		{registry.Problem{Line: 7, Why: "bad"}, `line 7: bad`},
		{registry.Problem{Tool: "x", Why: "bad"}, `tool "x": bad`},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
	ps := registry.Problems{tests[0].p, tests[1].p}
	if got, want := ps.Error(), tests[0].want+"\n"+tests[1].want; got != want {
		t.Errorf("Problems.Error() = %q, want %q", got, want)
	}
}
