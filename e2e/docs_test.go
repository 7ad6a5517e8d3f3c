package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleProvidersAreTheREADMEs: the providers block examples/registry.yaml
// carries commented out is the README's (section "Run the whole
// tool-calling loop"), and uncommented it passes `toolrouterd check`.
func TestExampleProvidersAreTheREADMEs(t *testing.T) {
	example, err := os.ReadFile("../examples/registry.yaml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The example's block: the commented lines from "# providers:" on.
	text := string(example)
	i := strings.Index(text, "\n# providers:\n")
	if i < 0 {
		t.Fatal("examples/registry.yaml has no commented providers block")
	}
	var block []string
	for _, line := range strings.Split(strings.TrimRight(text[i+1:], "\n"), "\n") {
		block = append(block, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
	}
	uncommented := strings.Join(block, "\n") + "\n"
	// The README's: the yaml block that starts with "providers:".
	r := string(readme)
	j := strings.Index(r, "```yaml\nproviders:\n")
	if j < 0 {
		t.Fatal("README has no ```yaml block starting with providers:")
	}
	end := strings.Index(r[j+8:], "```")
	if got := r[j+8 : j+8+end]; got != uncommented {
		t.Errorf("examples/registry.yaml's providers block:\n%s\nthe README's:\n%s", uncommented, got)
	}
	path := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(path, []byte(text[:i+1]+uncommented), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "2 provider(s)") {
		t.Errorf("the uncommented example: %v\n%s", err, out)
	}
}

// TestShippedFilesCiteOnlyWhatShips: the deployment and example files a user
// copies cite no document the repository does not have (they once cited
// "CONTRACT §3").
func TestShippedFilesCiteOnlyWhatShips(t *testing.T) {
	for _, dir := range []string{"../deployments", "../examples"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), "CONTRACT") {
				t.Errorf("%s cites CONTRACT, which is not in the repository", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
