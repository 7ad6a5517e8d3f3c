package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestLocalSkills: `skills: [{dir}]` (relative to the registry file) is a
// skill tool with the extension's entry (frontmatter verbatim, every
// file's digest); a bad skill is a problem naming the field and the file.
func TestLocalSkills(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("skills/triage/SKILL.md", "---\nname: triage\ndescription: Triage incoming bugs\nlicense: MIT\n---\nSee notes/guide.md.\n")
	write("skills/triage/notes/guide.md", "Label by component.\n")
	write("skills/bad/SKILL.md", "---\nname: bad\n---\nNo description.\n")
	reg, err := registry.Parse(filepath.Join(dir, "registry.yaml"), []byte("skills:\n  - dir: ./skills/triage\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sk, ok := reg.Lookup("skills/triage")
	if !ok || sk.Kind != toolrouter.KindSkill || sk.MCPServer != registry.LocalSkillServer || len(sk.Skill.Files) != 2 ||
		!strings.Contains(string(sk.Skill.Entry), `"license":"MIT"`) || !strings.HasPrefix(sk.Skill.Files["skill://triage/notes/guide.md"], "sha256:") {
		t.Fatalf("skills/triage: %+v %s", sk, sk.Skill.Entry)
	}
	if p, ok := reg.SkillFile("skill://triage/notes/guide.md"); !ok || p != filepath.Join(dir, "skills/triage/notes/guide.md") {
		t.Errorf("SkillFile: %q %v", p, ok)
	}
	_, err = registry.Parse(filepath.Join(dir, "registry.yaml"), []byte("skills:\n  - dir: ./skills/bad\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "skills[0].dir") || !strings.Contains(err.Error(), filepath.Join("skills", "bad", "SKILL.md")) ||
		!strings.Contains(err.Error(), "description") {
		t.Errorf("a skill without a description: %v", err)
	}
}
