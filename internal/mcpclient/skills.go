package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Skills (SEP-2640, the Skills extension io.modelcontextprotocol/skills,
// specification/stable/skills.mdx of modelcontextprotocol/ext-skills): a
// server that declares the extension is asked skills/list with the
// tools, and each skill joins the registry as a tool of kind skill named
// prefix + "skills/" + its skill path, its definition (what its pin
// digests) the server's entry, whose resources carry every file's
// digest: a changed file is a changed definition, quarantined and
// reviewed like a changed tool (docs/mcp.md "Skills").

const skillsExtension = "io.modelcontextprotocol/skills"

// SkillsListParams and SkillsListResult are skills/list's.
type SkillsListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type SkillsListResult struct {
	mcp.ResultBase
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// skillEntry is what toolrouterd reads of a skills/list entry.
type skillEntry struct {
	URI         string `json:"uri"`
	Frontmatter struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"frontmatter"`
	Resources json.RawMessage `json:"resources"`
}

// skillOf decodes an entry; an entry the extension calls invalid (no
// skill:// SKILL.md URI, no name, resources neither a list nor
// "dynamic") is an error.
func skillOf(raw json.RawMessage) (*toolrouter.Skill, string, string, error) {
	var e skillEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, "", "", fmt.Errorf("skills/list entry: %w", err)
	}
	path, ok := strings.CutSuffix(strings.TrimPrefix(e.URI, toolrouter.SkillScheme), "/SKILL.md")
	if !strings.HasPrefix(e.URI, toolrouter.SkillScheme) || !ok || path == "" || e.Frontmatter.Name == "" {
		return nil, "", "", fmt.Errorf("skills/list entry %q: not a skill:// SKILL.md URI with a name", e.URI)
	}
	sk := &toolrouter.Skill{URI: e.URI, Entry: raw}
	var dynamic string
	if json.Unmarshal(e.Resources, &dynamic) != nil || dynamic != "dynamic" {
		var files []struct {
			URI    string `json:"uri"`
			Digest string `json:"digest"`
		}
		if err := json.Unmarshal(e.Resources, &files); err != nil || len(files) == 0 {
			return nil, "", "", fmt.Errorf("skills/list entry %q: resources is neither a list nor \"dynamic\"", e.URI)
		}
		sk.Files = make(map[string]string, len(files))
		for _, f := range files {
			sk.Files[f.URI] = f.Digest
		}
	}
	return sk, path, e.Frontmatter.Description, nil
}

// skillDiscovered is a skill as a discovered item: a tool named
// "skills/" + its path, so the allowlist, prefix and pins treat it as
// they treat a tool.
func skillDiscovered(raw json.RawMessage) (discovered, error) {
	sk, path, desc, err := skillOf(raw)
	if err != nil {
		return discovered{}, err
	}
	d := newDiscovered(&mcp.Tool{Name: "skills/" + path, Description: desc})
	d.skill = sk
	return d, nil
}

// declaresSkills reports whether the session's server declared the
// extension.
func declaresSkills(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return false
	}
	_, ok := ir.Capabilities.Extensions[skillsExtension]
	return ok
}

// listSkills runs skills/list over every page, within pages pages; an
// invalid entry is skipped with a warning.
func (s *server) listSkills(ctx context.Context, cs *mcp.ClientSession, pages int) ([]discovered, error) {
	var out []discovered
	params := &SkillsListParams{}
	for page := 0; ; page++ {
		if page == pages {
			return nil, &limitError{limit: "pages", max: int64(pages)}
		}
		res, err := mcp.CallCustomMethod[*SkillsListParams, *SkillsListResult](ctx, cs, "skills/list", params)
		if err != nil {
			return nil, fmt.Errorf("skills/list: %w", err)
		}
		for _, raw := range res.Skills {
			d, err := skillDiscovered(raw)
			if err != nil {
				s.m.log.Warn().Str("mcp_server", s.name).Err(err).Msg("MCP server lists an invalid skill; left out")
				continue
			}
			out = append(out, d)
		}
		if res.NextCursor == "" || res.NextCursor == params.Cursor {
			return out, nil
		}
		params = &SkillsListParams{Cursor: res.NextCursor}
	}
}

// skillTool makes registry tool t (made by registryTool) the skill of d.
func skillTool(t *toolrouter.Tool, d discovered) *toolrouter.Tool {
	t.Kind = toolrouter.KindSkill
	t.Skill = d.skill
	t.Definition = d.skill.Entry
	return t
}

// redefineSkill is Redefine for a skill: the pinned entry.
func redefineSkill(t *toolrouter.Tool, def json.RawMessage) (*toolrouter.Tool, error) {
	d, err := skillDiscovered(def)
	if err != nil {
		return nil, fmt.Errorf("skill %s: pinned definition: %w", t.Name, err)
	}
	cfg := toolrouter.MCPServer{Name: t.MCPServer, Prefix: strings.TrimSuffix(t.Name, t.MCPTool), Timeout: t.Timeout}
	return registryTool(cfg, d), nil
}

// DirectoryReadParams and DirectoryReadResult are those of
// resources/directory/read, the Skills extension's optional method
// (specification/stable/skills.mdx, "Reading Directories"): the direct
// children of a directory resource, paged like resources/list.
type DirectoryReadParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

type DirectoryReadResult struct {
	mcp.ResultBase
	Resources  []*mcp.Resource `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// declaresDirectoryRead reports whether the session's server declared the
// extension's directoryRead setting (it then implements
// resources/directory/read).
func declaresDirectoryRead(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return false
	}
	settings, _ := ir.Capabilities.Extensions[skillsExtension].(map[string]any)
	on, _ := settings["directoryRead"].(bool)
	return on
}

// DirectoryRead reports whether MCP server name, as connected now,
// declared directoryRead.
func (m *Manager) DirectoryRead(name string) bool {
	s := m.server(name)
	if s == nil {
		return false
	}
	s.mu.Lock()
	cs := s.cs
	s.mu.Unlock()
	return cs != nil && declaresDirectoryRead(cs)
}

// ReadDirectoryAs relays resources/directory/read of uri (the server's
// own URI; cursor the server's) to MCP server name, made for the user of
// cred as ReadResourceAs is. A server that did not declare directoryRead
// is not asked (the extension forbids it).
func (m *Manager) ReadDirectoryAs(ctx context.Context, name, uri, cursor string, cred *toolrouter.Credential) (*DirectoryReadResult, error) {
	s := m.server(name)
	if s == nil {
		return nil, fmt.Errorf("MCP server %q is not configured", name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	var res *DirectoryReadResult
	err := s.onSession(ctx, cred, func(ctx context.Context, cs *mcp.ClientSession) error {
		if !declaresDirectoryRead(cs) {
			return fmt.Errorf("the server does not read directories (no directoryRead)")
		}
		var err error
		res, err = mcp.CallCustomMethod[*DirectoryReadParams, *DirectoryReadResult](ctx, cs, "resources/directory/read", &DirectoryReadParams{URI: uri, Cursor: cursor})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resources/directory/read of %s on %q: %w", uri, name, err)
	}
	return res, nil
}
