package registry_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// keyPrefixes maps each parser method that reads a mapping's keys (with
// p.fields) to the paths of that mapping in docs/registry.md's "Every key"
// table. A new p.fields call in another method fails the test until it is
// added here and its keys to the table.
var keyPrefixes = map[string][]string{
	"registry":       {""},
	"tool":           {"tools[]."},
	"circuit":        {"tools[].circuit.", "mcp_servers[].circuit."},
	"providers":      {"providers[]."},
	"mcpServers":     {"mcp_servers[]."},
	"toolBudgets":    {"mcp_servers[].tool_budgets.TOOL."},
	"clients":        {"clients[]."},
	"guardrails":     {"guardrails[]."},
	"secretPatterns": {"guardrails[].patterns[]."},
	"virtualServers": {"virtual_servers[]."},
	"overrides":      {"virtual_servers[].overrides.TOOL."},
	"hints":          {"virtual_servers[].overrides.TOOL.annotations."},
}

// acceptedKeys reads the package's sources: every key a p.fields call
// accepts, as its paths in the reference table.
func acceptedKeys(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "fields" {
					return true
				}
				prefixes, ok := keyPrefixes[fn.Name.Name]
				if !ok {
					t.Errorf("%s: p.fields in %s, which TestRegistryReferenceHasEveryKey does not know: add its keys to docs/registry.md and the method to keyPrefixes",
						fset.Position(call.Pos()), fn.Name.Name)
					return true
				}
				for _, a := range call.Args[2:] {
					lit, ok := a.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: a key that is not a string literal", fset.Position(a.Pos()))
						continue
					}
					k, _ := strconv.Unquote(lit.Value)
					for _, p := range prefixes {
						keys = append(keys, p+k)
					}
				}
				return true
			})
		}
	}
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
		t.Fatalf("found %d accepted keys in the parser; the scan is broken", len(accepted))
	}
	for _, k := range accepted {
		if !slices.Contains(rows, k) {
			t.Errorf("the registry accepts %s, docs/registry.md's \"Every key\" table has no row for it", k)
		}
	}
	for _, r := range rows {
		if !slices.Contains(accepted, r) {
			t.Errorf("docs/registry.md has a row for %s, which the registry does not accept", r)
		}
	}
}
