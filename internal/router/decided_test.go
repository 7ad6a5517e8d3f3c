package router_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/registry"
	"github.com/toolrouterd/toolrouterd/internal/router"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestWatchDecisionWokenBySettling: a watcher of a held call hears of its
// decision made by this router at once (issue 21 item 5), and a watcher
// that stopped leaves nothing behind.
func TestWatchDecisionWokenBySettling(t *testing.T) {
	reg, err := registry.Parse("t.yaml", []byte("tools:\n  - {name: pay, endpoint: 'http://127.0.0.1:9/pay', approval: required}\n"), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	rt := &router.Router{Tools: func() router.Tools { return reg }, Seq: st, Results: st, Approvals: st}
	ctx := context.Background()
	hold := func() *toolrouter.Result {
		t.Helper()
		res, err := rt.Route(ctx, "p", map[string]any{"name": "pay", "arguments": "{}"}, nil)
		if err != nil || res.Status != toolrouter.ResultAwaitingApproval {
			t.Fatalf("route: %+v %v", res, err)
		}
		return res
	}
	res := hold()
	ch, stop := rt.WatchDecision(ctx, res.ToolCallID)
	defer stop()
	select {
	case <-ch:
		t.Fatal("woken before the decision")
	default:
	}
	if _, _, err := rt.Decide(ctx, res.ApprovalID, false, "no"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("the decision did not wake the watcher")
	}
	// Another call: its watcher stops, then it is decided: no panic, no
	// wake of a later watcher of another call.
	other := hold()
	_, stopOther := rt.WatchDecision(ctx, other.ToolCallID)
	stopOther()
	third := hold()
	ch3, stop3 := rt.WatchDecision(ctx, third.ToolCallID)
	defer stop3()
	if _, _, err := rt.Decide(ctx, other.ApprovalID, false, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch3:
		t.Error("another call's decision woke this watcher")
	default:
	}
}
