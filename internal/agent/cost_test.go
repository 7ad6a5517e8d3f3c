package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/cost"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// pricedMeter is cost.Meter with every model at 10 USD per million input
// tokens.
type pricedMeter struct{ *cost.Meter }

func (pricedMeter) ModelPrice(toolrouter.Provider, string) toolrouter.ModelPrice {
	return toolrouter.ModelPrice{Input: 10_000_000, Currency: "USD"}
}

type dayLimit toolrouter.Micros

func (l dayLimit) ClientSpendLimit(string) toolrouter.SpendLimit {
	return toolrouter.SpendLimit{PerDay: toolrouter.Micros(l), HasDay: true, Currency: "USD"}
}
func (dayLimit) VirtualServerSpendLimit(string) toolrouter.SpendLimit { return toolrouter.SpendLimit{} }

// TestTurnsArePricedAndLimited: each model turn costs its reported usage
// at the model's price, in the run's turns and totals and in the ledger;
// once the client's daily limit (0.001 USD) is reached the next turn is
// not sent and the run ends budget_exhausted, past the limit by less than
// one turn (its cost was known only after it).
func TestTurnsArePricedAndLimited(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{call("c", "test/echo", map[string]any{"n": n})}, Usage: &llm.Usage{InputTokens: 30}}, nil
	}}
	r, _ := newRunner(a, echoRouter(nil, nil))
	ledger := memory.New()
	m := cost.New(ledger, func() cost.Limits { return dayLimit(1000) }, nil)
	r.Meter = pricedMeter{m}
	cs := access.NewClients(nil, []toolrouter.ClientSpec{{Name: "alice", Tools: []string{"*"}, Models: []string{"*"}}})
	ctx := access.NewContext(context.Background(), cs.ByName("alice"))
	pr, err := r.Start(ctx, agent.Request{Prompt: "spend"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Execute(ctx, pr, nil)
	if got.Status != toolrouter.RunTerminated || got.TerminatedReason == nil || *got.TerminatedReason != toolrouter.ReasonBudgetExhausted {
		t.Fatalf("run %s %v %v, want terminated budget_exhausted", got.Status, got.TerminatedReason, got.Error)
	}
	// 30 tokens at 10 USD per million: 0.0003 a turn; the fourth passes
	// the limit (0.0009 spent before it), the fifth is not sent.
	if len(a.reqs) != 4 || len(got.Turns) != 4 || got.Turns[3].Cost.Amount != 300 || got.Turns[3].Cost.Source != toolrouter.CostFromModel {
		t.Fatalf("%d requests, turns %+v", len(a.reqs), got.Turns)
	}
	if len(got.Cost) != 1 || got.Cost[0] != (toolrouter.Amount{Amount: 1200, Currency: "USD"}) {
		t.Errorf("run cost %+v", got.Cost)
	}
	day := time.Now().UTC()
	rows, err := ledger.Usage(context.Background(), toolrouter.UsageFilter{GroupBy: "model", From: day.Add(-time.Hour), To: day.Add(time.Hour)})
	if err != nil || len(rows) != 1 || rows[0].Amount != 1200 || rows[0].Calls != 4 || rows[0].Key != "fake/m" || rows[0].InputTokens != 120 {
		t.Errorf("ledger %+v %v", rows, err)
	}
}

// TestHeldCallCostCountsWhenResumed (docs/costs.md): a run's tool call
// held for an approval has no cost while it waits; once approved and the
// run resumed, what it cost is in the run's totals.
func TestHeldCallCostCountsWhenResumed(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "test/echo", map[string]any{"msg": "held"})}}, nil
		}
		return llm.Response{Content: "done"}, nil
	}}
	var held *toolrouter.Result
	echo := echoRouter(nil, nil)
	st := memory.New()
	rt := fakeRouter{route: func(ctx context.Context, planID string, p map[string]any) (*toolrouter.Result, error) {
		res, err := echo.route(ctx, planID, p)
		if err != nil {
			return nil, err
		}
		res.Success, res.Output, res.Status, res.ApprovalID = false, nil, toolrouter.ResultAwaitingApproval, "ap_1"
		held = res
		return res, st.SaveResult(ctx, res)
	}}
	r, _ := newRunner(a, rt)
	r.Runs = st
	ctx := context.Background()
	pr, err := r.Start(ctx, agent.Request{Prompt: "pay"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Execute(ctx, pr, nil); got.Status != toolrouter.RunAwaitingApproval || len(got.Cost) != 0 {
		t.Fatalf("run %+v, want it paused with nothing spent", got)
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	decided := *held
	decided.Status, decided.Success, decided.Output = "", true, []byte(`{"msg":"held"}`)
	decided.Cost = &toolrouter.Cost{Amount: 2000, Currency: "USD", Source: toolrouter.CostFromRegistry}
	if err := st.SaveResult(ctx, &decided); err != nil {
		t.Fatal(err)
	}
	got := r.Resume(ctx, pr.Run.RunID)
	if got == nil || got.Status != toolrouter.RunCompleted {
		t.Fatalf("resumed run %+v, want it completed", got)
	}
	if len(got.Cost) != 1 || got.Cost[0].Amount != 2000 || got.Cost[0].Currency != "USD" {
		t.Fatalf("run totals %+v, want the approved call's 0.002 USD", got.Cost)
	}
}
