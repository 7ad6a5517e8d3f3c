package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

func noEnv(string) string { return "" }

// TestSchemaRegistry: `toolrouterd schema registry` prints the embedded
// schema byte for byte, and it is a valid JSON Schema 2020-12 (the
// compiler checks it against the 2020-12 meta-schema).
func TestSchemaRegistry(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"toolrouterd", "schema", "registry"}, noEnv, &stdout, &stderr); err != nil {
		t.Fatalf("schema registry: %v\n%s", err, stderr.String())
	}
	embedded, err := os.ReadFile("../../internal/registry/registry.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), embedded) {
		t.Fatalf("toolrouterd schema registry printed %d bytes, not internal/registry/registry.schema.json (%d bytes)", stdout.Len(), len(embedded))
	}
	var head struct {
		Schema string `json:"$schema"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &head); err != nil || head.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema = %q (%v), want draft 2020-12", head.Schema, err)
	}
	doc, err := jsonschema.UnmarshalJSON(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///registry.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("mem:///registry.schema.json"); err != nil {
		t.Fatalf("the printed schema is not a valid JSON Schema 2020-12: %v", err)
	}
	// A broken meta-schema check would pass anything: a schema that
	// breaks the meta-schema must fail the same way.
	c = jsonschema.NewCompiler()
	if err := c.AddResource("mem:///bad.json", map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "mapping"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("mem:///bad.json"); err == nil {
		t.Fatal("the compiler accepted type: mapping; it does not check schemas")
	}

	stderr.Reset()
	if err := run(context.Background(), []string{"toolrouterd", "schema", "other"}, noEnv, &stdout, &stderr); err == nil || !strings.Contains(stderr.String(), "usage: toolrouterd schema registry") {
		t.Errorf("schema other: %v, %q", err, stderr.String())
	}
}

// TestCheckMisspeltKey is the editor test: a registry with a misspelt key
// fails `toolrouterd check`, naming the file and line of the key and its
// path in the file (the item, then the key), with the key it meant.
func TestCheckMisspeltKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(path, []byte(`tools:
  - name: test/echo
    endpoint: http://127.0.0.1:9001/echo
    timout: 10s
mcp_servers:
  - name: files
    url: http://127.0.0.1:3001/mcp
    circuit: {failures: 3, coldown: 30s}
providers:
  - {name: local, kind: ollama, model: qwen2.5:7b, base_ulr: "http://127.0.0.1:11434"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"toolrouterd", "check", path}, noEnv, &stdout, &stderr)
	if err == nil {
		t.Fatalf("check passed a misspelt key:\n%s", stdout.String())
	}
	want := strings.Join([]string{
		path + `:4: tool "test/echo": timout: unknown key (did you mean timeout?)`,
		path + `:8: mcp_servers[0].circuit.coldown: unknown key (did you mean cooldown?)`,
		path + `:10: providers[0].base_ulr: unknown key (did you mean base_url?)`,
		path + `: 3 problem(s)`,
	}, "\n") + "\n"
	if stderr.String() != want {
		t.Errorf("check printed:\n%s\nwant:\n%s", stderr.String(), want)
	}
}

// TestSchemaAcceptsEveryShippedRegistry: the published schema, with the
// same library that checks a file, accepts every registry the repository
// ships in examples/ and deployments/ (registry files, the Kubernetes
// ConfigMap's and the Helm chart's values), so that an editor pointed at
// it flags none of them.
func TestSchemaAcceptsEveryShippedRegistry(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(registry.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///registry.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///registry.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, dir := range []string{"../../examples", "../../deployments"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, reg := range shippedRegistries(t, path, b) {
				found++
				if err := sch.Validate(reg); err != nil {
					t.Errorf("%s (registry %d): the schema refuses it:\n%v", path, i, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// examples/registry*.yaml (4), deployments/compose-registry.yaml, the
	// ConfigMap and the Helm CI values.
	if found < 7 {
		t.Fatalf("found %d registries in examples/ and deployments/, want at least 7: the scan is broken", found)
	}
}

// shippedRegistries finds the registries in a YAML file of the
// repository: a registry file itself (its top-level keys are registry
// keys), a ConfigMap's data entry that is one, or a Helm values file's
// registry.content. Each is returned as JSON values.
func shippedRegistries(t *testing.T, path string, b []byte) []any {
	t.Helper()
	registryKeys := map[string]bool{"tools": true, "providers": true, "default_provider": true, "mcp_servers": true,
		"clients": true, "virtual_servers": true, "discovery": true, "guardrails": true}
	isRegistry := func(v any) bool {
		m, ok := v.(map[string]any)
		for k := range m {
			if !registryKeys[k] {
				return false
			}
		}
		return ok && len(m) > 0
	}
	asJSON := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return out
	}
	parse := func(text string) any {
		var v any
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			return nil
		}
		return v
	}
	var out []any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		m, _ := doc.(map[string]any)
		if isRegistry(doc) {
			out = append(out, asJSON(doc))
			continue
		}
		if data, ok := m["data"].(map[string]any); ok && m["kind"] == "ConfigMap" {
			for _, v := range data {
				if s, ok := v.(string); ok && isRegistry(parse(s)) {
					out = append(out, asJSON(parse(s)))
				}
			}
		}
		if r, ok := m["registry"].(map[string]any); ok {
			content := r["content"]
			if s, ok := content.(string); ok {
				content = parse(s)
			}
			if isRegistry(content) {
				out = append(out, asJSON(content))
			}
		}
	}
	return out
}
