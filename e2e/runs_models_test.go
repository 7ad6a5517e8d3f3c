package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// TestRunModelScopes: a client may run only the models its models globs
// grant ("provider/model"), and no model at all without them; a refused
// model is a 403 naming it, answered before any request reaches the
// provider; model_turns bounds the client's model requests (issue 32,
// finding 11: a client with no tools and a 1/h rate limit drove 250
// o1-pro requests on the operator's key).
func TestRunModelScopes(t *testing.T) {
	t.Parallel()
	tools := startTools(t)
	fake := startFakeLLM(t, "openai", "-api-key", "sk-test-123")
	reg := runsRegistry(t, tools.addr, fake, "FAKE_LLM_KEY") + `
clients:
  - {name: narrow, key_env: NARROW_KEY, tools: [], rate_limit: 1/h}
  - {name: granted, key_env: GRANTED_KEY, tools: ["*"], models: ["fake/fake-*"], model_turns: 3/h}
`
	rt, _ := startRouter(t, reg, "FAKE_LLM_KEY=sk-test-123", "NARROW_KEY=narrow-key", "GRANTED_KEY=granted-key")
	narrow := []string{"Authorization", "Bearer narrow-key"}
	granted := []string{"Authorization", "Bearer granted-key"}

	refused := func(what string, body map[string]any, model string, auth []string) {
		t.Helper()
		r := do(t, "POST", rt.URL()+"/runs", body, auth...)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), `may not use model \"`+model+`\"`) {
			t.Fatalf("%s: %d %s, want 403 naming model %q", what, r.Status, r.Body, model)
		}
	}
	refused("a client without models, the default model", map[string]any{"prompt": "hi"}, "fake-model", narrow)
	refused("a client without models, o1-pro", map[string]any{"prompt": "hi", "model": "o1-pro"}, "o1-pro", narrow)
	refused("a granted client, a model outside its globs", map[string]any{"prompt": "hi", "model": "o1-pro"}, "o1-pro", granted)
	if n := len(fake.requests(t)); n != 0 {
		t.Fatalf("refused runs reached the provider: %d requests", n)
	}

	// Granted: a run of two turns.
	fake.script(t,
		map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": "hello"})}},
		map[string]any{"text": "done"})
	r := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "echo"}, granted...)
	if run := decodeRun(t, r); r.Status != 200 || run.Status != "completed" || run.Content != "done" {
		t.Fatalf("granted run: %d %s", r.Status, r.Body)
	}
	// The third turn of the hour goes; the fourth is not sent.
	fake.script(t,
		map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": "again"})}},
		map[string]any{"text": "never sent"})
	r = do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "echo", "model": "fake-model-2"}, granted...)
	run := decodeRun(t, r)
	if run.Status != "failed" || run.Error == nil || !strings.Contains(*run.Error, `model turn limit of client "granted" exceeded (3/h)`) || run.Iterations != 1 {
		t.Fatalf("run over model_turns: %d %s", r.Status, r.Body)
	}
	if n := len(fake.requests(t)); n != 3 {
		t.Fatalf("the provider got %d requests, want 3 (model_turns: 3/h)", n)
	}
}

// TestModelTurnsSharedByReplicas: with PostgreSQL the replicas count a
// client's model turns in one counter, apart from its tool calls: a 2/h
// client gets 2 model requests in all, not 2 per replica.
func TestModelTurnsSharedByReplicas(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai", "-api-key", "sk-test-123")
	reg := runsRegistry(t, tools.addr, fake, "FAKE_LLM_KEY") + `
clients:
  - {name: alice, key_env: ALICE_KEY, tools: ["*"], models: ["*"], model_turns: 2/h, rate_limit: 1/h}
`
	reps := startReplicas(t, 2, reg, pgtest.Start(t), "FAKE_LLM_KEY=sk-test-123", "ALICE_KEY=alice-key")
	fake.script(t, map[string]any{"text": "one"}, map[string]any{"text": "two"}, map[string]any{"text": "three"}, map[string]any{"text": "four"})
	hour := time.Now().Truncate(time.Hour)
	var got []string
	for i := range 3 {
		run := decodeRun(t, do(t, "POST", reps[i%2].URL()+"/runs", map[string]any{"prompt": "hi"}, "Authorization", "Bearer alice-key"))
		got = append(got, run.Status)
	}
	if !time.Now().Truncate(time.Hour).Equal(hour) {
		t.Skip("a clock hour (the window of 2/h) ended mid-test: its counts are not comparable")
	}
	if fmt.Sprint(got) != "[completed completed failed]" {
		t.Fatalf("runs across replicas: %v, want [completed completed failed]", got)
	}
	if n := len(fake.requests(t)); n != 2 {
		t.Fatalf("the provider got %d requests, want 2", n)
	}
}
