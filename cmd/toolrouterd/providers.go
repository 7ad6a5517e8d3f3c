package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/anthropic"
	"github.com/toolrouterd/toolrouterd/internal/llm/ollama"
	"github.com/toolrouterd/toolrouterd/internal/llm/openai"
	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
)

// adapters returns the factory of provider adapters: one shared HTTP client,
// keys read from the variable each provider names at the time of the run.
func adapters(getenv func(string) string, tel *telemetry.Telemetry) func(p registry.Provider) (llm.Adapter, error) {
	client := &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}}
	client.Transport = tel.Transport(client.Transport) // traceparent to the providers
	return func(p registry.Provider) (llm.Adapter, error) {
		cfg := llm.Config{BaseURL: p.BaseURL, HTTPClient: client}
		if p.APIKeyEnv != "" {
			// A provider that names a key variable needs it: sending no key
			// would only get a 401 from the provider, after the run began.
			if cfg.APIKey = getenv(p.APIKeyEnv); cfg.APIKey == "" {
				return nil, fmt.Errorf("variable %s (api_key_env) is not set", p.APIKeyEnv)
			}
		}
		switch p.Kind {
		case "openai":
			return tel.Adapter(openai.New(cfg), "openai"), nil
		case "anthropic":
			return tel.Adapter(anthropic.New(cfg), "anthropic"), nil
		case "ollama":
			return tel.Adapter(ollama.New(cfg), "ollama"), nil
		}
		return nil, fmt.Errorf("unsupported provider kind %q", p.Kind)
	}
}
