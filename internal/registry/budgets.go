package registry

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/toolrouterd/toolrouterd/internal/shape"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// outputBudget reads the output budget keys of f.
func (p *parser) outputBudget(f map[string]entry, w where) toolrouter.OutputBudget {
	var b toolrouter.OutputBudget
	if v, ok := p.integer(f["max_output_bytes"], w, "max_output_bytes"); ok {
		if v < shape.MinBytes {
			p.addAt(f["max_output_bytes"].val, w, "max_output_bytes", fmt.Sprintf("must be at least %d", shape.MinBytes))
		} else {
			b.Bytes = v
		}
	}
	if v, ok := p.integer(f["max_output_tokens"], w, "max_output_tokens"); ok {
		if v < 1 {
			p.addAt(f["max_output_tokens"].val, w, "max_output_tokens", "must be at least 1")
		} else {
			b.Tokens = v
		}
	}
	for j, it := range p.list(f["keep"], w, "keep") {
		field := fmt.Sprintf("keep[%d]", j)
		d := deref(it)
		if d == nil || d.Kind != yaml.ScalarNode || d.ShortTag() == "!!null" {
			p.addAt(it, w, field, "must be a JSONPath query such as $.items[0:20]")
			continue
		}
		if err := shape.CheckKeep(d.Value); err != nil {
			p.addAt(it, w, field, fmt.Sprintf("not a JSONPath query (RFC 9535): %v", err))
			continue
		}
		b.Keep = append(b.Keep, d.Value)
	}
	if len(b.Keep) > 0 && b.IsZero() {
		p.addAt(f["keep"].val, w, "keep", "needs max_output_bytes or max_output_tokens")
	}
	return b
}

// toolBudgets reads an MCP server's tool_budgets: its tools' names on the
// server to their output budgets.
func (p *parser) toolBudgets(e entry, w where) map[string]toolrouter.OutputBudget {
	if e.val == nil {
		return nil
	}
	if e.val.Kind != yaml.MappingNode {
		p.addAt(e.val, w, "tool_budgets", "must be a mapping of the server's tool names to budgets")
		return nil
	}
	out := map[string]toolrouter.OutputBudget{}
	for _, kv := range p.pairs(e.val, w, "tool_budgets") {
		tw := where{tool: w.tool, prefix: w.prefix + "tool_budgets." + kv.key.Value + "."}
		n := deref(kv.val)
		if n == nil || n.Kind != yaml.MappingNode {
			p.addAt(kv.val, w, "tool_budgets."+kv.key.Value, "must be a mapping with max_output_bytes, max_output_tokens, keep")
			continue
		}
		out[kv.key.Value] = p.outputBudget(p.fields(n, tw, "max_output_bytes", "max_output_tokens", "keep"), tw)
	}
	return out
}
