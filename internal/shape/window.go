package shape

import "strings"

// windows are the context windows (tokens) of well-known model families,
// by name prefix, most specific first (docs/output-budgets.md "Budgets
// against the model's context window in /runs"; figures from the
// providers' model pages). A provider's context_window overrides
// them; a model not listed has none (its outputs are budgeted only by
// their tools').
var windows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576},
	{"gpt-5", 400_000},
	{"gpt-4o", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-3.5-turbo", 16_385},
	{"o1-mini", 128_000},
	{"o1", 200_000},
	{"o3", 200_000},
	{"o4-mini", 200_000},
	{"claude", 200_000},
	{"gemini-1.5-pro", 2_097_152},
	{"gemini-1.5-flash", 1_048_576},
	{"gemini-2", 1_048_576},
	{"llama3.1", 131_072},
	{"llama3.2", 131_072},
	{"llama3.3", 131_072},
	{"qwen2.5", 32_768},
	{"mistral", 32_768},
}

// ContextWindow is the context window of model: configured when set (a
// provider's context_window), else the table's for the model's name
// (matched after any "vendor/" or Bedrock "vendor." prefix), else 0.
func ContextWindow(model string, configured int) int {
	if configured > 0 {
		return configured
	}
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, vendor := range []string{"anthropic.", "us.anthropic.", "eu.anthropic.", "meta.", "mistral."} {
		m = strings.TrimPrefix(m, vendor)
	}
	for _, w := range windows {
		if strings.HasPrefix(m, w.prefix) {
			return w.tokens
		}
	}
	return 0
}

// RunShare is the token budget of each of n tool outputs of a /runs turn:
// what the model's window leaves after the turn's tokens so far (used: its
// prompt and answer as the provider reported them) and an eighth kept for
// the model's next answer, split evenly, at most a quarter of the window
// each and never under 256. 0 when the window is unknown.
func RunShare(window, used, n int) int {
	if window <= 0 || n <= 0 {
		return 0
	}
	left := window - window/8 - used
	return max(min(left/n, window/4), 256)
}
