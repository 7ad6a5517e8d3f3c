// Package registry reads the registry file (tools, LLM providers, MCP
// servers…), validates every part of it with file and line context, and
// keeps the registry in force across reloads.
//
// registry.schema.json (JSON Schema 2020-12, embedded; `toolrouterd schema
// registry` prints it) is the one list of the file's keys, their types,
// allowed values and the conditions between them. Parse validates the file
// against it and then, in Go, checks what a schema cannot say. A new key is
// a property in the schema (with a description), a row in docs/registry.md's
// "Every key" table (reference_test.go holds the two together), and the
// line of Go that reads it into its toolrouter type (p.str(ptr+"/key")…).
package registry

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Registry is a parsed, valid registry file. It is immutable: a reload
// builds a new one. The tools it hands out are shared and must not be
// modified.
type Registry struct {
	tools           []*toolrouter.Tool
	byName          map[string]*toolrouter.Tool // canonical names and aliases
	quarantined     []*toolrouter.Tool          // extra tools found by name, never listed
	providers       []toolrouter.Provider
	apiKeyEnvLines  map[string]int // provider name → line of its api_key_env
	defaultProvider string
	mcpServers      []toolrouter.MCPServer
	clients         []Client
	virtualServers  []VirtualServer
	discovery       string // discovery, registry-wide: "", full, search or code
	guardrails      []Guardrail
}

// aliasFormats are the provider formats whose name rules may force an
// alias; the strict rule of OpenAI also covers Anthropic and Bedrock.
var aliasFormats = []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatGemini, toolrouter.FormatMCP}

// Empty returns a registry with no tools, providers or MCP servers.
func Empty() *Registry {
	return &Registry{byName: map[string]*toolrouter.Tool{}}
}

// MaxFileBytes bounds the registry file: it is read whole, and a path such
// as /dev/zero must be an error, not the end of the process's memory.
const MaxFileBytes = 16 << 20

// Load reads and parses the registry file at path. A file that cannot be
// read, or is larger than MaxFileBytes, is an ordinary error; a bad file is
// Problems.
func Load(path string, getenv func(string) string) (*Registry, error) {
	data, err := readFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read registry: %w", err)
	}
	return Parse(path, data, getenv)
}

// readFile reads at most limit bytes of path; a longer file (or an endless
// one, like /dev/zero) is an error read no further than limit+1 bytes.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, limit>>20)
	}
	return data, nil
}

// Tools returns the tools in file order.
func (r *Registry) Tools() []*toolrouter.Tool {
	return slices.Clone(r.tools)
}

// Quarantined returns the tools Lookup finds but Tools does not list: the
// quarantined tools of MCP servers (docs/trusting-tools.md "Pinned
// definitions"), so that views can refuse them by name as Lookup does.
func (r *Registry) Quarantined() []*toolrouter.Tool {
	return slices.Clone(r.quarantined)
}

// Lookup finds a tool by its canonical name or by the alias it is exported
// under to any provider.
func (r *Registry) Lookup(name string) (*toolrouter.Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// APIKeyEnvLine is the line of the named provider's api_key_env in the
// file; 0 when it has none.
func (r *Registry) APIKeyEnvLine(provider string) int { return r.apiKeyEnvLines[provider] }

// Providers returns the LLM providers in file order.
func (r *Registry) Providers() []toolrouter.Provider {
	return slices.Clone(r.providers)
}

// toolrouter.Provider finds an LLM provider by name.
func (r *Registry) Provider(name string) (toolrouter.Provider, bool) {
	for _, p := range r.providers {
		if p.Name == name {
			return p, true
		}
	}
	return toolrouter.Provider{}, false
}

// DefaultProvider is the name of the provider /runs uses when the request
// names none: default_provider, else the first provider, else "".
func (r *Registry) DefaultProvider() string {
	return r.defaultProvider
}

// ServerAuth is the auth block of the MCP server name (nil: none, or no
// such server), read without copying the servers (every MCP call asks).
func (r *Registry) ServerAuth(name string) *toolrouter.BackendAuth {
	for i := range r.mcpServers {
		if r.mcpServers[i].Name == name {
			return r.mcpServers[i].Auth
		}
	}
	return nil
}

// MCPServers returns the MCP servers in file order.
func (r *Registry) MCPServers() []toolrouter.MCPServer {
	out := make([]toolrouter.MCPServer, len(r.mcpServers))
	for i, s := range r.mcpServers {
		s.Tools = slices.Clone(s.Tools)
		s.Headers = maps.Clone(s.Headers)
		out[i] = s
	}
	return out
}
