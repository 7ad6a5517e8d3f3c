package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// LocalSkillServer is the server label of the skills toolrouterd serves
// itself (`skills:`): their URIs are skill://toolrouterd/{name}/… on /mcp
// (docs/mcp.md "Skills"). No MCP server may take the name.
const LocalSkillServer = "toolrouterd"

// The extension's per-skill limits (SEP-2640 "Limits"), which a skill
// served by toolrouterd keeps.
const (
	maxSkillFiles = 512
	maxSkillBytes = 16 << 20
)

// skillName is the Agent Skills specification's rule for a name: 1-64
// lowercase letters, digits and hyphens, no leading, trailing or double
// hyphen.
var skillName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// localSkills reads the skills of `skills:` ({dir}, relative to the
// registry file's directory): each a tool of kind skill named "skills/" +
// its name, served by toolrouterd (LocalSkillServer), its entry the
// extension's (frontmatter verbatim, every file's digest and size). A
// problem names the field and the file.
func (p *parser) localSkills() []*toolrouter.Tool {
	var out []*toolrouter.Tool
	for _, ptr := range p.items("/mcp_servers") {
		if p.str(ptr+"/name") == LocalSkillServer && len(p.items("/skills")) > 0 {
			p.at(ptr+"/name", fmt.Sprintf("%q is the server label of the registry's skills", LocalSkillServer))
		}
	}
	for _, ptr := range p.items("/skills") {
		dir := p.str(ptr + "/dir")
		if dir == "" {
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(p.file), dir)
		}
		t, err := readSkill(dir)
		if err != nil {
			p.at(ptr+"/dir", err.Error())
			continue
		}
		out = append(out, t)
	}
	return out
}

// readSkill reads the skill in dir.
func readSkill(dir string) (*toolrouter.Tool, error) {
	md := filepath.Join(dir, "SKILL.md")
	b, err := os.ReadFile(md)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", md, err)
	}
	front, err := frontmatter(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", md, err)
	}
	name, _ := front["name"].(string)
	desc, _ := front["description"].(string)
	switch {
	case name == "" || desc == "":
		return nil, fmt.Errorf("%s: the frontmatter needs a name and a description", md)
	case len(name) > 64 || !skillName.MatchString(name):
		return nil, fmt.Errorf("%s: name %q: 1-64 lowercase letters, digits and single hyphens", md, name)
	case name != filepath.Base(dir):
		return nil, fmt.Errorf("%s: name %q is not the directory's name %q", md, name, filepath.Base(dir))
	}
	uri := toolrouter.SkillScheme + name + "/SKILL.md"
	sk := &toolrouter.Skill{URI: uri, Files: map[string]string{}, Paths: map[string]string{}}
	var files []map[string]any
	total := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (a skill holds files only)", path)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		u := toolrouter.SkillScheme + name + "/" + filepath.ToSlash(rel)
		sum := sha256.Sum256(content)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		sk.Files[u], sk.Paths[u] = digest, path
		files = append(files, map[string]any{"uri": u, "digest": digest, "size": len(content)})
		total += len(content)
		if len(files) > maxSkillFiles || total > maxSkillBytes {
			return fmt.Errorf("%s: over the extension's limits of %d files and %d bytes a skill", dir, maxSkillFiles, maxSkillBytes)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b map[string]any) int { return strings.Compare(a["uri"].(string), b["uri"].(string)) })
	entry, err := json.Marshal(map[string]any{"uri": uri, "frontmatter": front, "resources": files})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", md, err)
	}
	sk.Entry = entry
	return &toolrouter.Tool{Name: "skills/" + name, Description: desc, Kind: toolrouter.KindSkill,
		InputSchema: map[string]any{"type": "object"}, MCPServer: LocalSkillServer, MCPTool: "skills/" + name,
		Skill: sk, Definition: json.RawMessage(entry)}, nil
}

// frontmatter is the YAML between a SKILL.md's opening "---" line and
// the next, as a JSON object.
func frontmatter(b []byte) (map[string]any, error) {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return nil, fmt.Errorf("does not begin with YAML frontmatter (a --- line)")
	}
	head, _, ok := bytes.Cut(rest, []byte("\n---"))
	if !ok {
		return nil, fmt.Errorf("the frontmatter has no closing --- line")
	}
	var v map[string]any
	if err := yaml.Unmarshal(head, &v); err != nil {
		return nil, fmt.Errorf("frontmatter: %w", err)
	}
	// Through JSON, so the entry holds JSON values only.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("frontmatter: %w", err)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out, nil
}

// SkillFile is the file on disk of uri, a file of a skill toolrouterd
// serves itself (LocalSkillServer).
func (r *Registry) SkillFile(uri string) (string, bool) {
	for _, t := range r.tools {
		if t.Kind == toolrouter.KindSkill && t.MCPServer == LocalSkillServer {
			if path, ok := t.Skill.Paths[uri]; ok {
				return path, true
			}
		}
	}
	return "", false
}
