package registry

import (
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// price reads a cost block, {per_call, currency} (docs/costs.md): the
// zero Price when absent. The schema checked the types; the amount's
// precision is checked here, naming the field.
func (p *parser) price(ptr string) toolrouter.Price {
	if p.obj(ptr) == nil {
		return toolrouter.Price{}
	}
	pr := toolrouter.Price{Currency: p.currency(ptr)}
	pr.PerCall, _ = p.amount(ptr + "/per_call")
	return pr
}

// currency is the currency of the block at ptr (USD when it names none).
func (p *parser) currency(ptr string) string {
	if c := p.str(ptr + "/currency"); c != "" {
		return c
	}
	return toolrouter.DefaultCurrency
}

// amount reads a money amount at ptr into micro-units; false when absent
// or refused (the problem names the field).
func (p *parser) amount(ptr string) (toolrouter.Micros, bool) {
	f, ok := p.get(ptr).(float64)
	if !ok {
		return 0, false
	}
	m, ok := toolrouter.ParseMicros(f)
	if !ok {
		p.at(ptr, "must be an amount of at most 6 decimals between 0 and 1000000000000")
		return 0, false
	}
	return m, true
}

// spendLimit reads a spend_limit block, {per_day, per_month, currency}.
func (p *parser) spendLimit(ptr string) toolrouter.SpendLimit {
	if p.obj(ptr) == nil {
		return toolrouter.SpendLimit{}
	}
	l := toolrouter.SpendLimit{Currency: p.currency(ptr)}
	l.PerDay, l.HasDay = p.amount(ptr + "/per_day")
	l.PerMonth, l.HasMonth = p.amount(ptr + "/per_month")
	if l.HasDay && l.HasMonth && l.PerDay > l.PerMonth {
		p.at(ptr+"/per_day", "must not be more than per_month ("+l.PerMonth.String()+")")
	}
	return l
}

// modelPrices reads a provider's prices block, per million tokens.
func (p *parser) modelPrices(ptr string) toolrouter.ModelPrice {
	if p.obj(ptr) == nil {
		return toolrouter.ModelPrice{}
	}
	mp := toolrouter.ModelPrice{Currency: p.currency(ptr), Source: "registry"}
	mp.Input, _ = p.amount(ptr + "/input")
	mp.Output, _ = p.amount(ptr + "/output")
	mp.CachedInput, mp.HasCached = p.amount(ptr + "/cached_input")
	return mp
}

// toolPrices reads an MCP server's tool_costs: prices by tool name.
func (p *parser) toolPrices(ptr string) map[string]toolrouter.Price {
	if p.obj(ptr) == nil {
		return nil
	}
	out := map[string]toolrouter.Price{}
	for _, tp := range p.keys(ptr) {
		out[lastTok(tp)] = p.price(tp)
	}
	return out
}

// ClientSpendLimit is the spend limit of the named client (zero: none).
func (r *Registry) ClientSpendLimit(name string) toolrouter.SpendLimit {
	for _, c := range r.clients {
		if c.Name == name {
			return c.SpendLimit
		}
	}
	return toolrouter.SpendLimit{}
}

// VirtualServerSpendLimit is the spend limit of the named virtual server
// (zero: none).
func (r *Registry) VirtualServerSpendLimit(name string) toolrouter.SpendLimit {
	for _, v := range r.virtualServers {
		if v.Name == name {
			return v.SpendLimit
		}
	}
	return toolrouter.SpendLimit{}
}
