package approval_test

import (
	"context"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/pipeline"
	"github.com/toolrouterd/toolrouterd/internal/store/memory"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// userExec records the user of each call it gets.
type userExec struct{ users []*access.User }

func (u *userExec) Call(ctx context.Context, _ toolrouter.ExecRequest) toolrouter.Outcome {
	u.users = append(u.users, access.UserFromContext(ctx))
	return toolrouter.Outcome{Output: []byte(`{}`), Answered: true}
}

// TestApprovedCallHasNotTheApproversUser (docs/backend-auth.md): a call
// held for approval runs, once approved, without the approver's user, so
// no backend credential is ever chosen for the person who decided.
func TestApprovedCallHasNotTheApproversUser(t *testing.T) {
	st := memory.New()
	exec := &userExec{}
	r := &rig{
		Tools: func() pipeline.Tools {
			return toolMap{"pay": {Name: "pay", Approval: true, InputSchema: map[string]any{"type": "object"}}}
		},
		Exec: exec, Seq: st, Results: st, Approvals: st,
	}
	caller := access.NewUserContext(context.Background(), &access.User{Subject: "alice", Token: toolrouter.NewSecret("jwt-alice")})
	res, err := r.Route(caller, "p1", map[string]any{"name": "pay", "arguments": map[string]any{}}, nil)
	if err != nil || res.ApprovalID == "" {
		t.Fatalf("route: %+v %v", res, err)
	}
	approver := access.NewUserContext(context.Background(), &access.User{Subject: "bob", Token: toolrouter.NewSecret("jwt-bob")})
	if _, _, err := r.Decide(approver, res.ApprovalID, true, ""); err != nil {
		t.Fatal(err)
	}
	if len(exec.users) != 1 || exec.users[0] != nil {
		t.Fatalf("the approved call ran %d times, for %+v; want once, for no user", len(exec.users), exec.users)
	}
}
