package guardrail_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/guardrail"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

type guardrails []toolrouter.Guardrail

func (g guardrails) Guardrails() []toolrouter.Guardrail { return g }

// A hook answer with both "decision" and "Decision" (or a member twice)
// is not an answer: encoding/json would take the last of them, so a deny
// followed by an allow in another case let the call through. It is a hook
// error now, which on_error: deny refuses (issue 32, finding 14).
func TestWebhookAnswerWithCaseVariantMembersIsRefused(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"decision":"deny","Decision":"allow"}`,
		`{"decision":"deny","decision":"allow"}`,
		`{"DECISION":"allow"}`,
	} {
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(hook.Close)
		reg := guardrails{{Name: "policy", Endpoint: hook.URL, Tools: []string{"*"}, Clients: []string{"*"},
			Phase: toolrouter.PhaseBefore, Timeout: 5 * time.Second, OnError: "deny", Mode: toolrouter.ModeEnforce}}
		g := &guardrail.Guards{Registry: func() guardrail.Registry { return reg }, Client: guardrail.NewClient(nil)}
		v := g.Before(context.Background(), guardrail.Call{Tool: &toolrouter.Tool{Name: "kb/delete"}, Args: map[string]any{}, PlanID: "p", ToolCallID: "tc_1"})
		if v.Deny == "" || !strings.Contains(v.Deny, "policy") {
			t.Errorf("answer %s: the call went through (verdict %+v)", body, v)
		}
	}
}
