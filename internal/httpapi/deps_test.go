package httpapi_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDoesNotLinkTheRegistry: the HTTP edge does not link the registry file
// parser (internal/registry, its YAML library go.yaml.in/yaml/v3): access,
// guardrail and vserver take the registry in force through interfaces of
// their own, and the file's types they read are toolrouter's. kin-openapi's
// YAML library (v4, for api/openapi.yaml) is expected.
func TestDoesNotLinkTheRegistry(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/toolrouterd/toolrouterd/internal/httpapi").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %s", len(deps), out)
	}
	for _, p := range deps {
		if p == "github.com/toolrouterd/toolrouterd/internal/registry" || strings.HasPrefix(p, "go.yaml.in/yaml/v3") || strings.HasPrefix(p, "gopkg.in/yaml") {
			t.Errorf("internal/httpapi links %s", p)
		}
	}
}
