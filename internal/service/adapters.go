package service

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/anthropic"
	"github.com/toolrouterd/toolrouterd/internal/llm/bedrock"
	"github.com/toolrouterd/toolrouterd/internal/llm/gemini"
	"github.com/toolrouterd/toolrouterd/internal/llm/ollama"
	"github.com/toolrouterd/toolrouterd/internal/llm/openai"
	"github.com/toolrouterd/toolrouterd/internal/llm/responses"
	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Adapters makes the provider adapters of /runs: one shared HTTP client,
// keys read from the variable each provider names at the time of the run.
type Adapters struct {
	getenv    func(string) string
	tel       *telemetry.Telemetry
	transport *http.Transport
	client    *http.Client

	mu      sync.Mutex
	bedrock map[toolrouter.Provider]*bedrock.Adapter // by provider: the AWS SDK caches credentials per client
}

// NewAdapters returns the adapter factory reading keys with getenv.
func NewAdapters(getenv func(string) string, tel *telemetry.Telemetry) *Adapters {
	t := outbound.NewTransport()
	// traceparent to the providers
	return &Adapters{getenv: getenv, tel: tel, transport: t, client: &http.Client{Transport: tel.Transport(t)}}
}

// For returns the adapter of a provider of the registry.
func (a *Adapters) For(p toolrouter.Provider) (llm.Adapter, error) {
	cfg := llm.Config{BaseURL: p.BaseURL, HTTPClient: a.client}
	if p.APIKeyEnv != "" {
		// A provider that names a key variable needs it: sending no key
		// would only get a 401 from the provider, after the run began.
		if cfg.APIKey = a.getenv(p.APIKeyEnv); cfg.APIKey == "" {
			return nil, fmt.Errorf("variable %s (api_key_env) is not set", p.APIKeyEnv)
		}
	}
	switch p.Kind {
	case "openai":
		return a.tel.Adapter(openai.New(cfg), "openai"), nil
	case "anthropic":
		return a.tel.Adapter(anthropic.New(cfg), "anthropic"), nil
	case "ollama":
		return a.tel.Adapter(ollama.New(cfg), "ollama"), nil
	case "openai-responses":
		return a.tel.Adapter(responses.New(cfg), "openai"), nil // gen_ai.provider.name: the semantic conventions' values
	case "gemini":
		return a.tel.Adapter(gemini.New(cfg), "gcp.gemini"), nil
	case "bedrock":
		b, err := a.bedrockFor(p, cfg)
		if err != nil {
			return nil, err
		}
		return a.tel.Adapter(b, "aws.bedrock"), nil
	}
	return nil, fmt.Errorf("unsupported provider kind %q", p.Kind)
}

// bedrockFor is the Bedrock adapter of p, made once: loading the AWS
// configuration reads files, and the client caches the credentials it
// resolves (assumed roles, SSO) until they expire.
func (a *Adapters) bedrockFor(p toolrouter.Provider, cfg llm.Config) (*bedrock.Adapter, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.bedrock[p]; ok {
		return b, nil
	}
	b, err := bedrock.New(context.Background(), cfg, p.Region)
	if err != nil {
		return nil, err
	}
	if a.bedrock == nil || len(a.bedrock) >= 64 { // registries reloaded with ever new providers: start over
		a.bedrock = map[toolrouter.Provider]*bedrock.Adapter{}
	}
	a.bedrock[p] = b
	return b, nil
}

// CloseIdle closes the idle connections to providers.
func (a *Adapters) CloseIdle() { a.transport.CloseIdleConnections() }
