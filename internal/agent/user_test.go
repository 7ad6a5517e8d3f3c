package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/llm"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// subjects is an agent.Subjects keeping tokens in a map.
type subjects struct {
	mu   sync.Mutex
	kept map[string]string
}

func (s *subjects) KeepSubjectToken(_ context.Context, key, _ string, tok toolrouter.Secret, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept[key] = tok.Reveal()
	return nil
}

func (s *subjects) SubjectToken(_ context.Context, key string) (toolrouter.Secret, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kept[key]
	return toolrouter.NewSecret(v), ok, nil
}

// TestResumedRunKeepsItsCallersUser (docs/backend-auth.md): a run paused
// for an approval and resumed in the approver's request goes on for its
// caller's user, with the caller's JWT the vault kept (so a token
// exchange still works), never the approver's.
func TestResumedRunKeepsItsCallersUser(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		switch n {
		case 0:
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "test/echo", map[string]any{"msg": "held"})}}, nil
		case 1:
			return llm.Response{ToolCalls: []llm.ToolCall{call("c2", "test/echo", map[string]any{"msg": "after"})}}, nil
		}
		return llm.Response{Content: "done"}, nil
	}}
	var (
		mu    sync.Mutex
		users []*access.User
		held  *toolrouter.Result
	)
	echo := echoRouter(nil, nil)
	st := memory.New()
	rt := fakeRouter{route: func(ctx context.Context, planID string, p map[string]any) (*toolrouter.Result, error) {
		res, err := echo.route(ctx, planID, p)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		users = append(users, access.UserFromContext(ctx))
		if held == nil { // the first call waits for an approver
			res.Success, res.Output, res.Status, res.ApprovalID = false, nil, toolrouter.ResultAwaitingApproval, "ap_1"
			held = res
			if err := st.SaveResult(ctx, res); err != nil {
				return nil, err
			}
		}
		return res, nil
	}}
	r, _ := newRunner(a, rt)
	r.Runs = st
	r.Subjects = &subjects{kept: map[string]string{}}
	alice := access.NewUserContext(context.Background(), &access.User{Subject: "alice", Token: toolrouter.NewSecret("jwt-alice")})
	pr, err := r.Start(alice, agent.Request{Prompt: "pay"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Execute(alice, pr, nil); got.Status != toolrouter.RunAwaitingApproval {
		t.Fatalf("run %+v, want it paused", got)
	}
	if err := r.Wait(context.Background()); err != nil { // the pause's own resume attempt: still held, it stops
		t.Fatal(err)
	}
	// Approved: the held call's result is the tool's.
	decided := *held
	decided.Status, decided.Success, decided.Output = "", true, []byte(`{"msg":"held"}`)
	if err := st.SaveResult(context.Background(), &decided); err != nil {
		t.Fatal(err)
	}
	bob := access.NewUserContext(context.Background(), &access.User{Subject: "bob", Token: toolrouter.NewSecret("jwt-bob")})
	got := r.Resume(bob, pr.Run.RunID)
	if got == nil || got.Status != toolrouter.RunCompleted {
		t.Fatalf("resumed run %+v, want it completed", got)
	}
	mu.Lock()
	defer mu.Unlock()
	var subs []string
	for _, u := range users {
		if u == nil {
			subs = append(subs, "(none)")
		} else {
			subs = append(subs, u.Subject+"/"+u.Token.Reveal())
		}
	}
	if len(subs) != 2 || subs[0] != "alice/jwt-alice" || subs[1] != "alice/jwt-alice" || !users[1].Later {
		t.Fatalf("the calls ran for %v; want both for alice with her JWT (the resumed one marked Later)", subs)
	}
}

// TestRunRecordsAConnectURL: a run's tool call whose user must first
// connect the backend (auth mode oauth) is recorded as auth_required
// with the connect URL, for the caller of /runs to show.
func TestRunRecordsAConnectURL(t *testing.T) {
	a := &fakeAdapter{chat: func(n int, req llm.Request) (llm.Response, error) {
		if n == 0 {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "gh/issues", map[string]any{})}}, nil
		}
		return llm.Response{Content: "connect first"}, nil
	}}
	rt := fakeRouter{route: func(_ context.Context, planID string, p map[string]any) (*toolrouter.Result, error) {
		id, _ := toolrouter.ToolCallID(planID, 0)
		msg, cat := "backend gh: not connected for this user yet", toolrouter.CategoryAuth
		return &toolrouter.Result{ToolCallID: id, PlanID: planID, ToolName: "gh/issues", Error: &msg, ErrorCategory: &cat,
			Status: toolrouter.ResultAuthRequired, ConnectURL: "http://tr/connect/s1"}, nil
	}}
	r, _ := newRunner(a, rt)
	pr, err := r.Start(context.Background(), agent.Request{Prompt: "list my issues"})
	if err != nil {
		t.Fatal(err)
	}
	run := r.Execute(context.Background(), pr, nil)
	if len(run.ToolCalls) != 1 || run.ToolCalls[0].Status != "auth_required" || run.ToolCalls[0].ConnectURL != "http://tr/connect/s1" {
		t.Fatalf("tool calls %+v", run.ToolCalls)
	}
}
