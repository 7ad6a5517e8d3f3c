package service

import (
	"fmt"
	"net/http"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/anthropic"
	"github.com/toolrouterd/toolrouterd/internal/llm/ollama"
	"github.com/toolrouterd/toolrouterd/internal/llm/openai"
	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Adapters makes the provider adapters of /runs: one shared HTTP client,
// keys read from the variable each provider names at the time of the run.
type Adapters struct {
	getenv    func(string) string
	transport *http.Transport
	client    *http.Client
}

// NewAdapters returns the adapter factory reading keys with getenv.
func NewAdapters(getenv func(string) string) *Adapters {
	t := outbound.NewTransport()
	return &Adapters{getenv: getenv, transport: t, client: &http.Client{Transport: t}}
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
		return openai.New(cfg), nil
	case "anthropic":
		return anthropic.New(cfg), nil
	case "ollama":
		return ollama.New(cfg), nil
	}
	return nil, fmt.Errorf("unsupported provider kind %q", p.Kind)
}

// CloseIdle closes the idle connections to providers.
func (a *Adapters) CloseIdle() { a.transport.CloseIdleConnections() }
