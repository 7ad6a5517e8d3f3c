package registry_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
)

// acceptedKeys lists every key the registry's schema accepts, as its
// path in the reference table: tools[].circuit.failures,
// mcp_servers[].tool_budgets.TOOL.keep.
func acceptedKeys(t *testing.T) []string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(registry.Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	defs, _ := doc["$defs"].(map[string]any)
	resolve := func(n any) map[string]any {
		m, _ := n.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			m, _ = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		return m
	}
	var keys []string
	var walk func(node map[string]any, prefix string)
	walk = func(node map[string]any, prefix string) {
		props, _ := node["properties"].(map[string]any)
		for name, sub := range props {
			path := prefix + name
			keys = append(keys, path)
			s := resolve(sub)
			switch {
			case s["type"] == "array":
				walk(resolve(s["items"]), path+"[].")
			case s["properties"] != nil:
				walk(s, path+".")
			default:
				if ap := resolve(s["additionalProperties"]); ap["properties"] != nil {
					walk(ap, path+".TOOL.")
				}
			}
		}
	}
	walk(doc, "")
	return keys
}

// TestRegistryReferenceHasEveryKey: docs/registry.md's table has a row for
// every key the parser accepts, and no row for a key it refuses.
func TestRegistryReferenceHasEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../docs/registry.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Every key\n")
	if !ok {
		t.Fatal(`docs/registry.md has no "## Every key" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1])
	}
	accepted := acceptedKeys(t)
	if len(accepted) < 50 {
		t.Fatalf("found %d keys in the schema; the scan is broken", len(accepted))
	}
	for _, k := range accepted {
		if !slices.Contains(rows, k) {
			t.Errorf("the registry schema accepts %s, docs/registry.md's \"Every key\" table has no row for it", k)
		}
	}
	for _, r := range rows {
		if !slices.Contains(accepted, r) {
			t.Errorf("docs/registry.md has a row for %s, which the registry does not accept", r)
		}
	}
}
