package main

import (
	"fmt"

	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/llm/anthropic"
	"github.com/toolrouterd/toolrouterd/internal/llm/ollama"
	"github.com/toolrouterd/toolrouterd/internal/llm/openai"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// adapters returns the factory of provider adapters: one shared HTTP client,
// keys read from the variable each provider names at the time of the run.
func adapters(getenv func(string) string) func(p toolrouter.Provider) (llm.Adapter, error) {
	client := llm.NewHTTPClient()
	return func(p toolrouter.Provider) (llm.Adapter, error) {
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
			return openai.New(cfg), nil
		case "anthropic":
			return anthropic.New(cfg), nil
		case "ollama":
			return ollama.New(cfg), nil
		}
		return nil, fmt.Errorf("unsupported provider kind %q", p.Kind)
	}
}
