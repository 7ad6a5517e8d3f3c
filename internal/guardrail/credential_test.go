package guardrail_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestAuditKeepsTheCallsCredential (docs/backend-auth.md): a call made
// with a backend credential names it in its audit record whatever the
// stages after the backend made of its outcome: kept, denied by an
// after-hook, or failed against the tool's output schema.
func TestAuditKeepsTheCallsCredential(t *testing.T) {
	use := &toolrouter.CredentialUse{Mode: toolrouter.AuthTokenExchange, Subject: "alice", Actor: "toolrouterd", TokenID: "jti-1"}
	cases := []struct {
		name, tool, args, output, hook string
		success                        bool
	}{
		{name: "kept", tool: "test/echo", args: `{"msg":"hi"}`, output: `{"msg":"hi"}`, success: true},
		{name: "after-hook deny", tool: "test/echo", args: `{"msg":"hi"}`, output: `{"msg":"hi"}`, hook: `{"decision":"deny","reason":"no"}`},
		{name: "output schema", tool: "typed", args: `{}`, output: `{"n":"not a number"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			extra := ""
			if c.hook != "" {
				h := newHookServer(t, func(map[string]any) string { return c.hook })
				extra = "guardrails:\n  - {name: policy, endpoint: " + h.URL + ", phase: after}\n"
			}
			rt, _, aud := guardedRouter(t, toolrouter.Outcome{Output: json.RawMessage(c.output), Answered: true, Credential: use}, extra)
			res, err := rt.Route(context.Background(), "p", echoCall(t, c.tool, c.args), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Success != c.success {
				t.Fatalf("result %+v (error %v), want success %v", res, res.Error, c.success)
			}
			if len(aud.Recs) != 1 || aud.Recs[0].Credential == nil || *aud.Recs[0].Credential != *use {
				t.Fatalf("audit records %+v, want one naming the credential %+v", aud.Recs, use)
			}
		})
	}
}
