package agent

import (
	"context"
	"errors"
	"strconv"

	"github.com/toolrouterd/toolrouterd/internal/cost"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Meter prices model turns and holds them to the spend limits
// (cost.Meter, docs/costs.md).
type Meter interface {
	Reserve(ctx context.Context, e toolrouter.SpendEntry) (*cost.Refusal, error)
	Settle(ctx context.Context, e toolrouter.SpendEntry, c toolrouter.Cost)
	Drop(ctx context.Context, k toolrouter.SpendKey)
	ModelPrice(p toolrouter.Provider, model string) toolrouter.ModelPrice
}

// budgetError is a model turn a spend limit refused.
type budgetError struct{ r *cost.Refusal }

func (e *budgetError) Error() string { return e.r.Error() }

// reserveTurn holds a model turn to the spend limits of the run's client
// and view before it is sent: its price is known only from the usage the
// provider reports, so it reserves nothing, and is refused once a limit
// is reached. ok false: not metered.
func (x *execution) reserveTurn(ctx context.Context, iter int) (toolrouter.SpendEntry, bool, error) {
	m := x.r.Meter
	if m == nil {
		return toolrouter.SpendEntry{}, false, nil
	}
	price := m.ModelPrice(x.p.provider, x.p.model)
	e := toolrouter.SpendEntry{ID: x.run.RunID + "/turn/" + strconv.Itoa(iter), At: x.r.now(), Client: x.run.Client,
		Model: x.p.provider.Name + "/" + x.p.model, RunID: x.run.RunID, Currency: price.Currency, Unpriced: !price.Priced()}
	if x.p.view != nil {
		e.VirtualServer = x.p.view.ViewName()
	}
	refused, err := m.Reserve(ctx, e)
	if err != nil {
		return e, false, err
	}
	if refused != nil {
		return e, false, &budgetError{refused}
	}
	return e, true, nil
}

// settleTurn records what a turn cost from the usage its provider
// reported (unpriced without a price, or without usage), in the ledger and
// the run.
func (x *execution) settleTurn(ctx context.Context, iter int, e toolrouter.SpendEntry, u *llm.Usage) {
	price := x.r.Meter.ModelPrice(x.p.provider, x.p.model)
	c := toolrouter.Cost{Unpriced: true}
	if u != nil {
		tu := toolrouter.TokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens}
		c.Usage = &tu
		if price.Priced() {
			c = toolrouter.Cost{Amount: price.TokenCost(tu), Currency: price.Currency, Source: toolrouter.CostFromModel, Usage: &tu}
		}
	}
	x.r.Meter.Settle(ctx, e, c)
	x.mu.Lock()
	x.run.Turns = append(x.run.Turns, toolrouter.TurnCost{Iteration: iter, Model: e.Model, Cost: c})
	x.run.AddCost(c)
	x.mu.Unlock()
}

// addToolCosts adds what a turn's tool calls cost to the run and its turn,
// and reports whether a spend limit refused one of them.
func (x *execution) addToolCosts(iter int, records []toolrouter.ToolCallRecord) (refused bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var turn *toolrouter.TurnCost
	if n := len(x.run.Turns); n > 0 && x.run.Turns[n-1].Iteration == iter {
		turn = &x.run.Turns[n-1]
	}
	for _, rec := range records {
		if rec.ErrorCategory != nil && *rec.ErrorCategory == toolrouter.CategoryBudget {
			refused = true
		}
		if rec.Cost == nil {
			continue
		}
		x.run.AddCost(*rec.Cost)
		if turn != nil {
			turn.Tools = append(turn.Tools, *rec.Cost)
		}
	}
	return refused
}

// budgetOutcome is how a run ends when a spend limit refused its turn.
func budgetOutcome(err error) (*outcome, bool) {
	var be *budgetError
	if !errors.As(err, &be) {
		return nil, false
	}
	return &outcome{status: toolrouter.RunTerminated, reason: toolrouter.ReasonBudgetExhausted, err: be.Error()}, true
}
