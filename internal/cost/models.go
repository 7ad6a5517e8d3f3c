package cost

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

//go:embed models.json
var modelsJSON []byte

// ModelTable is the default model prices (models.json): what a provider
// without a prices block pays (docs/costs.md "Model prices").
type ModelTable struct {
	Checked string
	entries []modelEntry
}

type modelEntry struct {
	provider, prefix string
	price            toolrouter.ModelPrice
}

// DefaultModels reads the embedded table; a malformed table is a
// programming error (TestDefaultModelTable reads it).
func DefaultModels() (*ModelTable, error) {
	var f struct {
		Checked string              `json:"checked"`
		Sources map[string]string   `json:"sources"`
		Raw     []map[string]string `json:"models"`
	}
	if err := json.Unmarshal(modelsJSON, &f); err != nil {
		return nil, fmt.Errorf("model prices: %w", err)
	}
	t := &ModelTable{Checked: f.Checked}
	for i, m := range f.Raw {
		var mp toolrouter.ModelPrice
		var ok1, ok2 bool
		mp.Input, ok1 = toolrouter.ParseMicrosText(m["input"])
		mp.Output, ok2 = toolrouter.ParseMicrosText(m["output"])
		if !ok1 || !ok2 || m["prefix"] == "" || f.Sources[m["provider"]] == "" {
			return nil, fmt.Errorf("model prices: entry %d (%s) is malformed", i, m["prefix"])
		}
		if c, ok := m["cached_input"]; ok {
			if mp.CachedInput, mp.HasCached = toolrouter.ParseMicrosText(c); !mp.HasCached {
				return nil, fmt.Errorf("model prices: entry %d (%s): bad cached_input", i, m["prefix"])
			}
		}
		mp.Currency = toolrouter.DefaultCurrency
		mp.Source = f.Sources[m["provider"]] + ", checked " + f.Checked
		t.entries = append(t.entries, modelEntry{provider: m["provider"], prefix: m["prefix"], price: mp})
	}
	return t, nil
}

// kindVendor is the table's provider of each provider kind whose models it
// prices (Bedrock's Anthropic models under their Anthropic names).
var kindVendor = map[string]string{"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic", "gemini": "gemini", "bedrock": "anthropic"}

// Lookup is the price of model on a provider of kind: the registry's
// prices when set, else the table's entry of the longest prefix of the
// model id that names it or one of its snapshots; the zero ModelPrice when
// none (unpriced).
func (t *ModelTable) Lookup(p toolrouter.Provider, model string) toolrouter.ModelPrice {
	if p.Prices.Priced() {
		return p.Prices
	}
	if t == nil {
		return toolrouter.ModelPrice{}
	}
	vendor := kindVendor[p.Kind]
	id := model
	if p.Kind == "bedrock" {
		// us.anthropic.claude-sonnet-4-20250514-v1:0 → claude-sonnet-4-…
		i := strings.Index(id, "anthropic.")
		if i < 0 {
			return toolrouter.ModelPrice{}
		}
		id = id[i+len("anthropic."):]
	}
	best := -1
	for i, e := range t.entries {
		if e.provider == vendor && snapshotOf(id, e.prefix) && (best < 0 || len(e.prefix) > len(t.entries[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return toolrouter.ModelPrice{}
	}
	return t.entries[best].price
}

// snapshotOf reports whether id is the model prefix names or a dated
// snapshot of it (gpt-4o-2024-08-06, claude-sonnet-4-20250514), not
// another model whose name starts the same (o3-mini is not o3,
// claude-sonnet-4-5 is not claude-sonnet-4).
func snapshotOf(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || rest == "" {
		return ok
	}
	// A snapshot's suffix is a date: -2024-08-06, -20250514 (-5 is a new
	// minor version, claude-opus-4-5, with prices of its own).
	digits := 0
	for _, r := range rest[1:] {
		if r < '0' || r > '9' {
			break
		}
		digits++
	}
	return rest[0] == '-' && digits >= 4
}
