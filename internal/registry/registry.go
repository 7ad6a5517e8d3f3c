// Package registry reads the registry file (tools, LLM providers, MCP
// servers), validates every part of it with file and line context, and keeps
// the registry in force across reloads.
package registry

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Provider is an LLM provider the agent loop of /runs can talk to.
type Provider struct {
	Name string
	// Kind is "openai", "anthropic" or "ollama".
	Kind string
	// BaseURL is the base URL as the official SDKs take it (openai …/v1,
	// anthropic without /v1, ollama without /api).
	BaseURL string
	Model   string
	// APIKeyEnv names the environment variable holding the key; empty
	// means no key.
	APIKeyEnv string
}

// MCPServer is an MCP server whose tools join the registry.
type MCPServer struct {
	Name string
	URL  string
	// Prefix is prepended to the server's tool names to make canonical
	// names.
	Prefix string
	// Tools is the allowlist of the server's tool names; "*" allows all.
	Tools   []string
	Headers map[string]string
	Timeout time.Duration
	// Roots are the file:// URIs offered to the server as MCP roots; the
	// roots capability is advertised only when there are some.
	Roots []string
}

// Registry is a parsed, valid registry file. It is immutable: a reload
// builds a new one. The tools it hands out are shared and must not be
// modified.
type Registry struct {
	tools           []*toolrouter.Tool
	byName          map[string]*toolrouter.Tool // canonical names and aliases
	providers       []Provider
	defaultProvider string
	mcpServers      []MCPServer
}

// aliasFormats are the provider formats whose name rules may force an
// alias; the strict rule of OpenAI also covers Anthropic and Bedrock.
var aliasFormats = []toolrouter.Format{toolrouter.FormatOpenAI, toolrouter.FormatGemini, toolrouter.FormatMCP}

// Empty returns a registry with no tools, providers or MCP servers.
func Empty() *Registry {
	return &Registry{byName: map[string]*toolrouter.Tool{}}
}

// Load reads and parses the registry file at path. A file that cannot be
// read is an ordinary error; a bad file is Problems.
func Load(path string, getenv func(string) string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read registry: %w", err)
	}
	return Parse(path, data, getenv)
}

// Tools returns the tools in file order.
func (r *Registry) Tools() []*toolrouter.Tool {
	return slices.Clone(r.tools)
}

// Lookup finds a tool by its canonical name or by the alias it is exported
// under to any provider.
func (r *Registry) Lookup(name string) (*toolrouter.Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Providers returns the LLM providers in file order.
func (r *Registry) Providers() []Provider {
	return slices.Clone(r.providers)
}

// Provider finds an LLM provider by name.
func (r *Registry) Provider(name string) (Provider, bool) {
	for _, p := range r.providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// DefaultProvider is the name of the provider /runs uses when the request
// names none: default_provider, else the first provider, else "".
func (r *Registry) DefaultProvider() string {
	return r.defaultProvider
}

// MCPServers returns the MCP servers in file order.
func (r *Registry) MCPServers() []MCPServer {
	out := make([]MCPServer, len(r.mcpServers))
	for i, s := range r.mcpServers {
		s.Tools = slices.Clone(s.Tools)
		s.Headers = maps.Clone(s.Headers)
		out[i] = s
	}
	return out
}
