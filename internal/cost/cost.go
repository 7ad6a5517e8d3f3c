// Package cost prices tool calls and model turns, keeps what they cost in
// the spend ledger and enforces spend limits (docs/costs.md): the cost
// stage of the call pipeline and the pricing of /runs model turns.
package cost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Ledger is the spend ledger (store.Spend).
type Ledger interface {
	ReserveSpend(ctx context.Context, e toolrouter.SpendEntry, checks []toolrouter.SpendCheck) (int, error)
	SettleSpend(ctx context.Context, e toolrouter.SpendEntry) error
	DropSpend(ctx context.Context, k toolrouter.SpendKey) error
}

// Limits are the spend limits of the registry in force.
type Limits interface {
	ClientSpendLimit(name string) toolrouter.SpendLimit
	VirtualServerSpendLimit(name string) toolrouter.SpendLimit
}

// Meter prices, records and limits what calls and model turns cost. Its
// fields are set once.
type Meter struct {
	Ledger Ledger
	Limits func() Limits
	Now    func() time.Time // nil: time.Now
	// Models is the default model price table (nil: only the registry's
	// prices).
	Models *ModelTable

	cost     *prometheus.CounterVec
	unpriced *prometheus.CounterVec
}

// New is a Meter whose counters register with reg (nil: not registered).
func New(ledger Ledger, limits func() Limits, reg prometheus.Registerer) *Meter {
	m := &Meter{Ledger: ledger, Limits: limits,
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolrouter_cost_total",
			Help: "What tool calls and model turns cost, in units of the currency (docs/costs.md); exact amounts are in GET /usage."},
			[]string{"client", "tool", "model", "currency"}),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolrouter_unpriced_calls_total",
			Help: "Tool calls and model turns that ran with no price (counted as unpriced, never as 0)."},
			[]string{"client", "tool", "model"}),
	}
	if reg != nil {
		reg.MustRegister(m.cost, m.unpriced)
	}
	return m
}

func (m *Meter) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Refusal is a spend limit refusing a call or a turn: which limit, and
// when its period ends.
type Refusal struct {
	Scope, Name, Period string
	Limit               toolrouter.Micros
	Currency            string
	Until               time.Time
}

// Error is the refusal's message: the limit, never what others spent.
func (r *Refusal) Error() string {
	who := "client"
	if r.Scope == toolrouter.ScopeVirtualServer {
		who = "virtual server"
	}
	return fmt.Sprintf("spend limit reached: %s %q may spend %s %s per %s; it resets at %s",
		who, r.Name, r.Limit, r.Currency, r.Period, r.Until.UTC().Format(time.RFC3339))
}

// Reserve puts e in the ledger unless a spend limit of its client or
// virtual server refuses it (then the Refusal, and nothing is kept). With
// no limit to check nothing is written: the settled entry is written once
// the call ran (with its result, or by Settle for a model turn).
func (m *Meter) Reserve(ctx context.Context, e toolrouter.SpendEntry) (*Refusal, error) {
	return m.reserve(ctx, e, m.checks(e))
}

// reserve is Reserve with e's limits already read.
func (m *Meter) reserve(ctx context.Context, e toolrouter.SpendEntry, checks []toolrouter.SpendCheck) (*Refusal, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	i, err := m.Ledger.ReserveSpend(ctx, e, checks)
	if err != nil {
		return nil, fmt.Errorf("reserve spend: %w", err)
	}
	if i < 0 {
		return nil, nil
	}
	c := checks[i]
	return &Refusal{Scope: c.Counter.Scope, Name: c.Counter.Name, Period: c.Counter.Period, Limit: c.Limit,
		Currency: c.Counter.Currency, Until: toolrouter.PeriodEnd(c.Counter.Period, e.At)}, nil
}

// checks are the limits e must stay within.
func (m *Meter) checks(e toolrouter.SpendEntry) []toolrouter.SpendCheck {
	if m.Limits == nil {
		return nil
	}
	lim := m.Limits()
	var out []toolrouter.SpendCheck
	add := func(scope, name string, l toolrouter.SpendLimit) {
		amount := toolrouter.Micros(0)
		if e.Currency == l.Currency {
			amount = e.Amount
		}
		for _, p := range []struct {
			period string
			has    bool
			max    toolrouter.Micros
		}{{toolrouter.PeriodDay, l.HasDay, l.PerDay}, {toolrouter.PeriodMonth, l.HasMonth, l.PerMonth}} {
			if p.has {
				out = append(out, toolrouter.SpendCheck{Limit: p.max, Amount: amount, Counter: toolrouter.SpendCounter{Scope: scope, Name: name,
					Currency: l.Currency, Period: p.period, Start: toolrouter.PeriodStart(p.period, e.At)}})
			}
		}
	}
	if e.Client != "" {
		add(toolrouter.ScopeClient, e.Client, lim.ClientSpendLimit(e.Client))
	}
	if e.VirtualServer != "" {
		add(toolrouter.ScopeVirtualServer, e.VirtualServer, lim.VirtualServerSpendLimit(e.VirtualServer))
	}
	return out
}

// Settle records what e cost once it ran, in its own ledger write, and
// counts it: a model turn's (one write a turn). A tool call's entry is not
// written here but with the call's result (Settled). A failure to record
// is logged: the turn already ran.
func (m *Meter) Settle(ctx context.Context, e toolrouter.SpendEntry, c toolrouter.Cost) {
	e = m.Settled(e, c)
	if err := m.Ledger.SettleSpend(context.WithoutCancel(ctx), e); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Str("id", e.ID).Msg("record spend")
	}
}

// Settled is e once it ran at cost c, counted in the metrics but not
// written: the cost stage hands it to the call's audit record, which the
// store writes in the same transaction as the call's result (one group
// commit for the result, the record and the ledger entry, none of its
// own; docs/costs.md "The ledger").
func (m *Meter) Settled(e toolrouter.SpendEntry, c toolrouter.Cost) toolrouter.SpendEntry {
	e.Amount, e.Currency, e.Unpriced = c.Amount, c.Currency, c.Unpriced
	if c.Usage != nil {
		e.Usage = *c.Usage
	}
	if c.Unpriced {
		m.unpriced.WithLabelValues(e.Client, e.Tool, e.Model).Inc()
	} else {
		m.cost.WithLabelValues(e.Client, e.Tool, e.Model, c.Currency).Add(float64(c.Amount) / toolrouter.MicrosPerUnit)
	}
	return e
}

// Drop removes a reservation whose call did not run.
func (m *Meter) Drop(ctx context.Context, k toolrouter.SpendKey) {
	if err := m.Ledger.DropSpend(context.WithoutCancel(ctx), k); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Str("id", k.ID).Msg("drop spend reservation")
	}
}

// viewNamer is a view with a name (vserver.View).
type viewNamer interface{ ViewName() string }

// Stage is the cost stage (docs/architecture.md "The pipeline of a
// call"): before the call, its known price is reserved against the spend
// limits of its client and virtual server, and a call that would pass one
// is refused as budget without running; after it, what it cost (the
// price a backend reported in _meta, else the registry's, else unpriced)
// is settled: the entry goes on the request (req.Spend) for the
// finisher's audit record, which the store writes with the call's result
// in one transaction, so a routed call makes no ledger write of its own
// (a limited call's reservation excepted). A call that did not reach its
// backend costs nothing.
func (m *Meter) Stage(next toolrouter.Next) toolrouter.Next {
	return func(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
		if req.Tool == nil || req.TaskOp != nil {
			// (A poll of a backend task: its call was metered.)
			return next(ctx, req)
		}
		client := access.FromContext(ctx).LabelName()
		// The entry starts when the call did, the time of its audit
		// record, by which GET /audit finds its cost (SpendKey); a call
		// resumed from an approval starts here.
		if req.Start.IsZero() {
			req.Start = m.now()
		}
		// A tc_ id is unique within its client's plans (as results are
		// kept): the ledger keys the entry by both.
		e := toolrouter.SpendEntry{ID: toolrouter.ScopedKey(client, req.ID), At: req.Start, Client: client, Tool: req.Tool.Name,
			RunID: req.RunID, Currency: req.Tool.Price.Currency, Amount: req.Tool.Price.PerCall, Unpriced: !req.Tool.Price.Priced()}
		if v, ok := req.View.(viewNamer); ok {
			e.VirtualServer = v.ViewName()
		}
		checks := m.checks(e)
		limited := len(checks) > 0 // else nothing is reserved, and there is nothing to drop
		refused, err := m.reserve(ctx, e, checks)
		if err != nil {
			zerolog.Ctx(ctx).Error().Err(err).Msg("spend ledger")
			return toolrouter.Outcome{Err: "spend ledger unavailable; retry later", Category: toolrouter.CategoryResource}
		}
		if refused != nil {
			req.RetryAfter = refused.Until
			return toolrouter.Outcome{Err: refused.Error(), Category: toolrouter.CategoryBudget}
		}
		out := next(ctx, req)
		if out.Held || out.Attempts == 0 && !out.Answered {
			if limited {
				m.Drop(ctx, e.Key()) // held (its resumption reserves again) or never sent
			}
			return out
		}
		// The cost and its ledger entry, which the result and the audit
		// record point to, in one allocation (issue 37).
		x := &settledCost{cost: CallCost(req.Tool.Price, out)}
		x.entry = m.Settled(e, x.cost)
		req.Cost, req.Spend = &x.cost, &x.entry
		return out
	}
}

// settledCost is a call's cost and its settled ledger entry, allocated
// together.
type settledCost struct {
	cost  toolrouter.Cost
	entry toolrouter.SpendEntry
}

// CallCost is what a call that ran cost: the cost its backend reported in
// _meta when it did, else its price, else unpriced.
func CallCost(price toolrouter.Price, out toolrouter.Outcome) toolrouter.Cost {
	if c, ok := Reported(out.MCPResult); ok {
		return c
	}
	if c, ok := Reported(out.Output); ok {
		return c
	}
	if price.Priced() {
		return toolrouter.Cost{Amount: price.PerCall, Currency: price.Currency, Source: toolrouter.CostFromRegistry}
	}
	return toolrouter.Cost{Unpriced: true}
}

// MetaKey is the _meta key under which a backend reports what a call
// cost: {"amount": 0.0123, "currency": "USD"} (docs/costs.md "Reported
// costs").
const MetaKey = "toolrouter/cost"

// Reported reads the cost a backend reported in the _meta of its answer
// (an MCP CallToolResult, or an HTTP tool's JSON object): MetaKey, or
// usageTotalUsd (USD), the key Apify's MCP server reports. Amounts are
// read exactly, never through a float.
func Reported(answer json.RawMessage) (toolrouter.Cost, bool) {
	if len(answer) == 0 || !bytes.Contains(answer, []byte(`"_meta"`)) {
		return toolrouter.Cost{}, false
	}
	var v struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(answer, &v) != nil || v.Meta == nil {
		return toolrouter.Cost{}, false
	}
	if raw, ok := v.Meta[MetaKey]; ok {
		var c struct {
			Amount   json.Number `json:"amount"`
			Currency string      `json:"currency"`
		}
		if json.Unmarshal(raw, &c) == nil {
			if m, ok := amount(c.Amount); ok {
				if c.Currency == "" {
					c.Currency = toolrouter.DefaultCurrency
				}
				return toolrouter.Cost{Amount: m, Currency: c.Currency, Source: toolrouter.CostReported}, true
			}
		}
	}
	if raw, ok := v.Meta["usageTotalUsd"]; ok {
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			if m, ok := amount(n); ok {
				return toolrouter.Cost{Amount: m, Currency: "USD", Source: toolrouter.CostReported}, true
			}
		}
	}
	return toolrouter.Cost{}, false
}

// amount reads a reported amount: exactly when it has at most six
// decimals, else rounded to the nearest micro-unit.
func amount(n json.Number) (toolrouter.Micros, bool) {
	if m, ok := toolrouter.ParseMicrosText(n.String()); ok {
		return m, true
	}
	f, err := n.Float64()
	if err != nil || f < 0 || math.IsInf(f, 0) || f > 1e12 {
		return 0, false
	}
	return toolrouter.Micros(math.Round(f * toolrouter.MicrosPerUnit)), true
}

// ModelPrice is what model's tokens cost on provider p: its registry
// prices, else the default table's (docs/costs.md "Model prices").
func (m *Meter) ModelPrice(p toolrouter.Provider, model string) toolrouter.ModelPrice {
	return m.Models.Lookup(p, model)
}
