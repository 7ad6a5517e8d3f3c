package toolrouter

import (
	"encoding/json"
	"strings"
)

// KindSkill is an MCP server's skill (SEP-2640, the Skills extension
// io.modelcontextprotocol/skills, specification/stable/skills.mdx of
// modelcontextprotocol/ext-skills): held in the registry beside the
// tools so that scopes, virtual servers and pins apply to it as to a
// tool, but never offered to a model as a tool nor called (docs/mcp.md
// "Skills").
const KindSkill ToolKind = "skill"

// Skill is a skill as its server's skills/list entry describes it.
type Skill struct {
	// URI is the skill's SKILL.md on its server.
	URI string
	// Entry is the server's entry ({uri, frontmatter, resources}) as it
	// sent it.
	Entry json.RawMessage
	// Files are the entry's resources: each file's URI on the server and
	// its digest ("sha256:" and 64 hex digits); nil for a "dynamic" skill.
	Files map[string]string
	// Paths are the files on disk of a skill toolrouterd serves itself,
	// by URI (registry `skills:`); nil for a server's.
	Paths map[string]string
}

// SkillScheme is the scheme of skill resources.
const SkillScheme = "skill://"

// GatewaySkillURI is the name toolrouterd gives skill resource uri of
// MCP server server: skill://{server}/{the rest of uri}. The server's
// name becomes the first segment of the skill path, an organisational
// prefix the extension allows, so the final segment is still the skill's
// name and two servers' equal URIs never collide.
func GatewaySkillURI(server, uri string) string {
	return SkillScheme + server + "/" + strings.TrimPrefix(uri, SkillScheme)
}

// ParseGatewaySkillURI is the server and backend URI of a gateway
// skill:// name; ok is false for anything GatewaySkillURI did not make.
func ParseGatewaySkillURI(uri string) (server, backend string, ok bool) {
	rest, found := strings.CutPrefix(uri, SkillScheme)
	if !found {
		return "", "", false
	}
	server, tail, found := strings.Cut(rest, "/")
	if !found || server == "" || tail == "" {
		return "", "", false
	}
	return server, SkillScheme + tail, true
}
