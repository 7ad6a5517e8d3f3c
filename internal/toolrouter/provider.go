package toolrouter

// Provider is an LLM provider of the registry's providers section (README,
// "The registry file"), which the tool-calling loop of /runs talks to.
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
