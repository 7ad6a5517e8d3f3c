package registry_test

import (
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// vsHead has two file tools and an MCP server; virtual servers follow.
const vsHead = `tools:
  - name: gh/create_issue
    endpoint: http://tools.example/ci
    input_schema:
      type: object
      required: [repo, title]
      properties:
        repo: {type: string, pattern: "^[a-z]+/[a-z]+$"}
        title: {type: string}
        labels: {type: array, items: {type: string}}
  - name: gh/list_issues
    endpoint: http://tools.example/li
mcp_servers:
  - name: files
    url: http://127.0.0.1:3001/mcp
`

func TestVirtualServersParse(t *testing.T) {
	src := vsHead + `virtual_servers:
  - name: support
    tools: ["gh/*", "files/read_file"]
    overrides:
      gh/create_issue:
        name: file_bug
        description: File a bug
        title: File a bug
        annotations: {destructiveHint: false, openWorldHint: true}
        defaults: {repo: acme/app}
        hidden: [labels]
      files/read_file: {name: read}
    discovery: search
    max_output_bytes: 16384
    max_output_tokens: 4000
discovery: search
clients:
  - {name: bot, key_sha256: "` + strings.Repeat("a", 64) + `", virtual_servers: [support]}
`
	reg, err := registry.Parse("r.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	vs := reg.VirtualServers()
	if len(vs) != 1 || vs[0].Name != "support" || !vs[0].Search || vs[0].MaxOutputBytes != 16384 || vs[0].MaxOutputTokens != 4000 || !reg.Search() {
		t.Fatalf("virtual servers %+v, search %v", vs, reg.Search())
	}
	ov := vs[0].Overrides[0]
	if ov.Tool != "gh/create_issue" || ov.Name != "file_bug" || ov.Defaults["repo"] != "acme/app" || ov.Hidden[0] != "labels" ||
		ov.Hints == nil || ov.Hints.Destructive == nil || *ov.Hints.Destructive || !*ov.Hints.OpenWorld || ov.Hints.ReadOnly != nil {
		t.Fatalf("override %+v", ov)
	}
	if c := reg.Clients()[0]; len(c.VirtualServers) != 1 || c.VirtualServers[0] != "support" {
		t.Fatalf("client %+v", c)
	}
}

// TestVirtualServerProblems: what check refuses, each naming its field.
func TestVirtualServerProblems(t *testing.T) {
	vs := func(body string) string {
		return vsHead + "virtual_servers:\n  - name: s\n    tools: [\"gh/*\"]\n" + body
	}
	tests := []struct{ name, src, want string }{
		{"override names no tool", vs("    overrides:\n      gh/nope: {name: x}\n"),
			`virtual server "s": overrides.gh/nope: names no tool of the registry (nor of an MCP server, by its prefix)`},
		{"override outside the server's tools", vs("    overrides:\n      files/x: {name: x}\n"),
			`virtual server "s": overrides.files/x: names a tool outside this server's tools`},
		{"default does not satisfy the schema", vs("    overrides:\n      gh/create_issue: {defaults: {repo: 42}}\n"),
			`virtual server "s": overrides.gh/create_issue.defaults: do not satisfy the input schema of tool "gh/create_issue"`},
		{"default fails a pattern", vs("    overrides:\n      gh/create_issue: {defaults: {repo: Not A Repo}}\n"),
			`overrides.gh/create_issue.defaults: do not satisfy the input schema`},
		{"default of no argument", vs("    overrides:\n      gh/create_issue: {defaults: {colour: red}}\n"),
			`overrides.gh/create_issue.defaults.colour: tool "gh/create_issue" has no argument "colour"`},
		{"hidden required without default", vs("    overrides:\n      gh/create_issue: {hidden: [title]}\n"),
			`overrides.gh/create_issue.hidden[0]: argument "title" is required by tool "gh/create_issue"; hide it only with a default`},
		{"hidden of no argument", vs("    overrides:\n      gh/create_issue: {hidden: [nope]}\n"),
			`overrides.gh/create_issue.hidden[0]: tool "gh/create_issue" has no argument "nope"`},
		{"duplicate exported names", vs("    overrides:\n      gh/create_issue: {name: same}\n      gh/list_issues: {name: same}\n"),
			`overrides.gh/list_issues.name: exported name "same" is also that of tool "gh/create_issue"`},
		{"meta-tool name in search mode", vs("    discovery: search\n    overrides:\n      gh/create_issue: {name: call_tool}\n"),
			`exported name "call_tool" is a meta-tool's in discovery: search`},
		{"bad discovery", vs("    discovery: smart\n"), `virtual server "s": discovery: must be full, search or code, got "smart"`},
		{"bad budget", vs("    max_output_bytes: 0\n"), `virtual server "s": max_output_bytes: must be at least 256`},
		{"bad annotation", vs("    overrides:\n      gh/create_issue: {annotations: {readOnlyHint: maybe}}\n"), `annotations.readOnlyHint: must be true or false`},
		{"annotations not a mapping", vs("    overrides:\n      gh/create_issue: {annotations: yes}\n"), `overrides.gh/create_issue.annotations: must be a mapping`},
		{"override not a mapping", vs("    overrides:\n      gh/create_issue: [x]\n"), `overrides.gh/create_issue: must be a mapping`},
		{"unknown override key", vs("    overrides:\n      gh/create_issue: {colour: red}\n"), `overrides.gh/create_issue.colour: unknown key`},
		{"tools required", vsHead + "virtual_servers:\n  - name: s\n", `virtual server "s": tools: required`},
		{"duplicate server", vs("  - name: s\n    tools: [\"*\"]\n"), `virtual server "s": name: duplicate name`},
		{"unknown server on a client", vs("clients:\n  - {name: bot, key_sha256: \"" + strings.Repeat("a", 64) + "\", virtual_servers: [s, nope]}\n"),
			`client "bot": virtual_servers[1]: no virtual server named "nope" (defined: s)`},
		{"bad top-level discovery", vsHead + "discovery: yes\n", `discovery: must be full, search or code, got "yes"`},
		{"bad provider search_mode", "providers:\n  - {name: p, kind: openai, model: m, search_mode: always}\n", `providers[0].search_mode: must be call or inject, got "always"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse("r.yaml", []byte(tc.src), nil)
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n%v\nwant it to contain\n%s", err, tc.want)
			}
		})
	}
}
