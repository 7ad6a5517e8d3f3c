package approval_test

import (
	"context"
	"testing"
	"time"

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

// subjects is an approval.Subjects keeping tokens in a map.
type subjects map[string]string

func (s subjects) KeepSubjectToken(_ context.Context, key, _ string, tok toolrouter.Secret, _ time.Time) error {
	s[key] = tok.Reveal()
	return nil
}

func (s subjects) SubjectToken(_ context.Context, key string) (toolrouter.Secret, bool, error) {
	v, ok := s[key]
	return toolrouter.NewSecret(v), ok, nil
}

// TestApprovedCallRunsForItsCallersUser (docs/backend-auth.md): a call
// held for approval runs, once approved, for its caller's user with the
// JWT the vault kept (so a token exchange still works), never the
// approver's; without a vault, for the caller's user with no token.
func TestApprovedCallRunsForItsCallersUser(t *testing.T) {
	for _, keep := range []bool{true, false} {
		exec := approveAsBob(t, keep)
		want := "jwt-alice"
		if !keep {
			want = ""
		}
		if len(exec.users) != 1 || exec.users[0] == nil || exec.users[0].Subject != "alice" || exec.users[0].Token.Reveal() != want || !exec.users[0].Later {
			t.Fatalf("vault %v: the approved call ran %d times, for %+v; want once, for alice with token %q", keep, len(exec.users), exec.users, want)
		}
	}
}

func approveAsBob(t *testing.T, keep bool) *userExec {
	st := memory.New()
	exec := &userExec{}
	r := &rig{
		Tools: func() pipeline.Tools {
			return toolMap{"pay": {Name: "pay", Approval: true, InputSchema: map[string]any{"type": "object"}}}
		},
		Exec: exec, Seq: st, Results: st, Approvals: st,
	}
	if keep {
		r.Subjects = subjects{}
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
	if a, err := st.GetApproval(context.Background(), res.ApprovalID); err != nil || a.User != "alice" {
		t.Fatalf("approval %+v %v: want user alice", a, err)
	}
	return exec
}
