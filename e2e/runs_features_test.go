package e2e_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// wireCall is a tool call of an assistant turn, or the result answering
// one, read from a provider request whatever its wire format.
type wireCall struct {
	ID, Name, Text string
	IsError        bool
}

// wireTurn is one message of a provider request: the calls an assistant
// turn asked for, or the results a turn sent back.
type wireTurn struct {
	Role    string
	Calls   []wireCall
	Results []wireCall
}

func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// wireTurns reads the conversation of a request of provider's format.
func wireTurns(provider string, body map[string]any) []wireTurn {
	var out []wireTurn
	list := func(k string) []any { l, _ := body[k].([]any); return l }
	switch provider {
	case "openai", "ollama":
		for _, m := range list("messages") {
			m := m.(map[string]any)
			role, _ := m["role"].(string)
			if role == "tool" {
				// Ollama answers a call by tool_name, OpenAI by tool_call_id.
				id, _ := m["tool_call_id"].(string)
				name, _ := m["tool_name"].(string)
				r := wireCall{ID: id, Name: name, Text: jsonText(m["content"])}
				if n := len(out); n > 0 && out[n-1].Role == "tool" {
					out[n-1].Results = append(out[n-1].Results, r)
				} else {
					out = append(out, wireTurn{Role: "tool", Results: []wireCall{r}})
				}
				continue
			}
			t := wireTurn{Role: role}
			calls, _ := m["tool_calls"].([]any)
			for _, c := range calls {
				c := c.(map[string]any)
				fn, _ := c["function"].(map[string]any)
				id, _ := c["id"].(string)
				t.Calls = append(t.Calls, wireCall{ID: id, Name: fmt.Sprint(fn["name"])})
			}
			out = append(out, t)
		}
	case "anthropic", "bedrock":
		for _, m := range list("messages") {
			m := m.(map[string]any)
			t := wireTurn{Role: fmt.Sprint(m["role"])}
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				b, _ := b.(map[string]any)
				switch {
				case b["type"] == "tool_use":
					t.Calls = append(t.Calls, wireCall{ID: fmt.Sprint(b["id"]), Name: fmt.Sprint(b["name"])})
				case b["type"] == "tool_result":
					t.Results = append(t.Results, wireCall{ID: fmt.Sprint(b["tool_use_id"]), Text: jsonText(b["content"]), IsError: b["is_error"] == true})
				case b["toolUse"] != nil:
					u := b["toolUse"].(map[string]any)
					t.Calls = append(t.Calls, wireCall{ID: fmt.Sprint(u["toolUseId"]), Name: fmt.Sprint(u["name"])})
				case b["toolResult"] != nil:
					r := b["toolResult"].(map[string]any)
					t.Results = append(t.Results, wireCall{ID: fmt.Sprint(r["toolUseId"]), Text: jsonText(r["content"]), IsError: r["status"] == "error"})
				}
			}
			out = append(out, t)
		}
	case "openai-responses":
		// Items: consecutive function_call items are one turn, consecutive
		// function_call_output items its answers.
		for _, it := range list("input") {
			it := it.(map[string]any)
			kind, _ := it["type"].(string)
			role := map[string]string{"function_call": "assistant", "function_call_output": "tool", "reasoning": "assistant"}[kind]
			if role == "" {
				role = fmt.Sprint(it["role"])
			}
			if n := len(out); n == 0 || out[n-1].Role != role || kind == "message" || kind == "" {
				out = append(out, wireTurn{Role: role})
			}
			t := &out[len(out)-1]
			switch kind {
			case "function_call":
				t.Calls = append(t.Calls, wireCall{ID: fmt.Sprint(it["call_id"]), Name: fmt.Sprint(it["name"])})
			case "function_call_output":
				t.Results = append(t.Results, wireCall{ID: fmt.Sprint(it["call_id"]), Text: jsonText(it["output"])})
			}
		}
	case "gemini":
		for _, c := range list("contents") {
			c := c.(map[string]any)
			t := wireTurn{Role: fmt.Sprint(c["role"])}
			parts, _ := c["parts"].([]any)
			for _, p := range parts {
				p, _ := p.(map[string]any)
				if fc, ok := p["functionCall"].(map[string]any); ok {
					id, _ := fc["id"].(string)
					t.Calls = append(t.Calls, wireCall{ID: id, Name: fmt.Sprint(fc["name"])})
				}
				if fr, ok := p["functionResponse"].(map[string]any); ok {
					id, _ := fr["id"].(string)
					resp, _ := fr["response"].(map[string]any)
					t.Results = append(t.Results, wireCall{ID: id, Name: fmt.Sprint(fr["name"]), Text: jsonText(fr), IsError: resp["error"] != nil})
				}
			}
			out = append(out, t)
		}
	}
	return out
}

// checkAnswered: in a request of provider's format, every assistant turn
// asking for calls is followed at once by one message answering all of
// them, in call order, by id (by name where the call had no id), and no
// result answers a call that was not asked for.
func checkAnswered(t *testing.T, provider string, i int, body map[string]any) []wireTurn {
	t.Helper()
	turns := wireTurns(provider, body)
	for k, tn := range turns {
		if len(tn.Results) > 0 && (k == 0 || len(turns[k-1].Calls) == 0) {
			t.Errorf("request %d: results %v answer no assistant turn", i, tn.Results)
		}
		if len(tn.Calls) == 0 {
			continue
		}
		if k+1 >= len(turns) {
			t.Errorf("request %d: the last turn's calls %v are unanswered", i, tn.Calls)
			continue
		}
		res := turns[k+1].Results
		if len(res) != len(tn.Calls) {
			t.Errorf("request %d: %d calls answered by %d results: %+v → %+v", i, len(tn.Calls), len(res), tn.Calls, res)
			continue
		}
		for j, c := range tn.Calls {
			if c.ID != "" && res[j].ID != c.ID || c.ID == "" && res[j].Name != c.Name {
				t.Errorf("request %d: call %d %s/%s answered by %s/%s", i, j, c.ID, c.Name, res[j].ID, res[j].Name)
			}
		}
	}
	return turns
}

// TestRunsFeatureCombosEachProvider: for each provider kind, one /runs
// loop through a virtual server in search mode (search_mode: inject) whose
// tools are an HTTP tool and tools discovered from a stdio MCP server, with
// a renamed tool and a hidden argument, guardrails (a webhook deny and
// redact_secrets), an output budget and the context window's share, a
// failing tool and a call held for approval. Turn 1 asks two searches at
// once; turn 2 asks five calls at once (the renamed tool denied, the
// renamed tool with a secret, hidden argument and a long text, the
// budgeted tool, the failing tool, the held tool); the run pauses, is
// approved, resumes and answers. Every request the fake received must be
// valid for its API (the fake refuses what the real one does) with every
// call answered at once, in order, by id, and the results as the checks
// expect.
func TestRunsFeatureCombosEachProvider(t *testing.T) {
	tools := startTools(t)
	guard := startGuardServer(t)
	// Each provider kind with one way of asking: synchronous, SSE (the
	// stream ends at awaiting_approval) or Prefer: respond-async.
	cases := []struct{ provider, mode string }{
		{string(llmtest.OpenAI), "sync"}, {string(llmtest.Anthropic), "stream"}, {string(llmtest.Ollama), "async"},
		{string(llmtest.OpenAIResponses), "stream"}, {string(llmtest.Gemini), "async"}, {string(llmtest.Bedrock), "sync"},
	}
	if len(cases) != len(llmtest.Providers) {
		t.Fatalf("%d cases for %d provider kinds", len(cases), len(llmtest.Providers))
	}
	for _, tc := range cases {
		provider := tc.provider
		t.Run(provider+"/"+tc.mode, func(t *testing.T) {
			t.Parallel()
			fake := startFakeLLM(t, provider, "-api-key", "sk-test-123")
			model, key := "fake-model", "api_key_env: FAKE_LLM_KEY"
			switch provider {
			case "gemini":
				model = "gemini-3-flash-preview"
			case "bedrock":
				key = "region: us-west-2"
			}
			reg := exampleRegistry(t, tools.addr) + fmt.Sprintf(`
mcp_servers:
  - name: sx
    command: [%[1]q, -stdio]
    tools: [echo, big]
    tool_budgets:
      big: {max_output_bytes: 4096}
providers:
  - {name: fake, kind: %[2]s, base_url: %[3]q, model: %[4]s, %[5]s, context_window: 8192}
default_provider: fake
clients:
  - {name: agent, key_sha256: %[6]s, tools: ["*"], approval: ["math/add", "test/echo"], models: ["*"]}
  - {name: reviewer, key_sha256: %[7]s, tools: ["*"], approver: true, models: ["*"]}
virtual_servers:
  - name: combo
    tools: ["sx/echo", "sx/big", "test/fail", "math/add", "test/echo"]
    discovery: search
    overrides:
      sx/echo: {name: say, defaults: {tag: fixed}, hidden: [secret]}
guardrails:
  - {name: policy, endpoint: "%[8]s/policy", tools: ["sx/echo"], phase: both}
  - {name: secrets, builtin: redact_secrets, tools: ["*"]}
`, fixtureBin(t), provider, fake.baseURL, model, key, sum("agent-key"), sum("reviewer-key"), guard.URL)
			rt, _ := startRouter(t, reg, append(bedrockEnv("sk-test-123"), "FAKE_LLM_KEY=sk-test-123")...)

			alias := func(name string) string { return toolrouter.ExportName(toolrouter.FormatOpenAI, name) }
			long := "key " + leakAWS + " " + strings.Repeat("lorem ipsum ", 4000)
			fake.script(t,
				map[string]any{"tool_calls": []any{
					map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "returns its arguments as they arrived", "limit": 1}},
					map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "text of the given number of bytes", "limit": 1}},
				}},
				map[string]any{"tool_calls": []any{
					map[string]any{"name": "say", "arguments": map[string]any{"msg": "deny-me"}},
					map[string]any{"name": "say", "arguments": map[string]any{"msg": long, "secret": "s3cr3t-arg", "tag": "mine"}},
					map[string]any{"name": alias("sx/big"), "arguments": map[string]any{"bytes": 50000}},
					map[string]any{"name": "call_tool", "arguments": map[string]any{"name": alias("test/fail"), "arguments": map[string]any{}}},
					map[string]any{"name": "call_tool", "arguments": map[string]any{"name": alias("math/add"), "arguments": map[string]any{"a": 2, "b": 3}}},
					map[string]any{"name": "call_tool", "arguments": map[string]any{"name": alias("test/echo"), "arguments": map[string]any{"msg": "held " + leakAWS + " " + strings.Repeat("dolor sit ", 5000)}}},
				}, "usage": map[string]any{"input_tokens": 1000, "output_tokens": 24}},
				map[string]any{"text": "All done."})

			body := map[string]any{"prompt": "go", "server": "combo", "search_mode": "inject"}
			var runID string
			var pending []string
			switch tc.mode {
			case "sync":
				resp := do(t, "POST", rt.URL()+"/runs", body, asAgent...)
				runID, pending = decodeRun(t, resp).RunID, pendingOf(t, resp)
				if resp.Status != 202 || decodeRun(t, resp).Status != "awaiting_approval" {
					t.Fatalf("POST /runs: %d %.2000s", resp.Status, resp.Body)
				}
			case "async":
				resp := do(t, "POST", rt.URL()+"/runs", body, append([]string{"Prefer", "respond-async"}, asAgent...)...)
				if resp.Status != 202 {
					t.Fatalf("POST /runs async: %d %.2000s", resp.Status, resp.Body)
				}
				runID = decodeRun(t, resp).RunID
				waitRun(t, rt, runID, func(r runResult) bool { return r.Status == "awaiting_approval" }, asAgent...)
				pending = pendingOf(t, do(t, "GET", rt.URL()+"/runs/"+runID, nil, asAgent...))
			case "stream":
				status, events := stream(t, rt.URL()+"/runs", body, asAgent...)
				var kinds []string
				for _, e := range events {
					kinds = append(kinds, e.Event)
				}
				// Concurrent calls interleave their started and finished
				// events: compare each turn's kinds, sorted.
				var turnKinds []string
				for _, part := range strings.Split(strings.Join(kinds, ","), "model_turn") {
					k := strings.Split(strings.Trim(part, ","), ",")
					slices.Sort(k)
					turnKinds = append(turnKinds, strings.Join(k, ","))
				}
				want := []string{"run_started",
					"tool_call_finished,tool_call_finished,tool_call_started,tool_call_started",
					"awaiting_approval," + strings.Repeat("tool_call_finished,", 6) + strings.TrimSuffix(strings.Repeat("tool_call_started,", 6), ",")}
				if status != 200 || !slices.Equal(turnKinds, want) {
					t.Fatalf("stream: %d %v", status, kinds)
				}
				last := events[len(events)-1].Data
				runID, _ = last["run_id"].(string)
				pa, _ := last["pending_approvals"].([]any)
				for _, p := range pa {
					pending = append(pending, fmt.Sprint(p.(map[string]any)["approval_id"]))
				}
				// Events name the tools by their registry names, whatever
				// the model called them (a started call_tool is call_tool:
				// its arguments are call_tool's).
				for _, e := range events {
					if e.Event == "tool_call_finished" || e.Event == "tool_call_started" {
						if n := fmt.Sprint(e.Data["tool_name"]); n == "say" || n == alias("sx/big") || e.Event == "tool_call_finished" && n == "call_tool" {
							t.Errorf("%s event names %s", e.Event, n)
						}
					}
				}
			}
			if len(pending) != 2 {
				t.Fatalf("run %s pending approvals %v, want 2", runID, pending)
			}
			// The add is denied, the long echo approved: two decisions, then
			// the run resumes.
			for i, d := range []map[string]any{{"decision": "deny", "reason": "not now"}, {"decision": "approve"}} {
				if r := do(t, "POST", rt.URL()+"/approvals/"+pending[i], d, asReviewer...); r.Status != 200 {
					t.Fatalf("decide %v: %d %s", d, r.Status, r.Body)
				}
			}
			done := waitRun(t, rt, runID, func(r runResult) bool { return r.Status != "awaiting_approval" && r.Status != "running" }, asAgent...)
			doc, _ := json.Marshal(done)
			if done.Status != "completed" || done.Content != "All done." || done.Iterations != 3 || len(done.ToolCalls) != 8 {
				t.Fatalf("final run: %.3000s", doc)
			}

			// The final document: canonical names, each outcome.
			var names []string
			for _, c := range done.ToolCalls {
				names = append(names, c.ToolName)
			}
			if want := []string{"search_tools", "search_tools", "sx/echo", "sx/echo", "sx/big", "test/fail", "math/add", "test/echo"}; !slices.Equal(names, want) {
				t.Errorf("records %v, want %v", names, want)
			}
			c := done.ToolCalls
			if !c[0].Success || !c[1].Success || !strings.Contains(jsonText(c[0].Output), "say") || !strings.Contains(jsonText(c[1].Output), alias("sx/big")) {
				t.Errorf("searches: %s / %s", jsonText(c[0].Output), jsonText(c[1].Output))
			}
			if c[2].Success || c[2].ErrorCategory == nil || *c[2].ErrorCategory != "permission" || !strings.Contains(*c[2].Error, "deny-me is not allowed") {
				t.Errorf("denied say: %+v", c[2])
			}
			if out := jsonText(c[3].Output); !c[3].Success || strings.Contains(out, leakAWS) || !strings.Contains(out, "[REDACTED:") ||
				strings.Contains(out, "s3cr3t-arg") || !strings.Contains(out, `fixed`) || len(out) > 16<<10 {
				t.Errorf("say with a secret: %d bytes %.400s", len(out), out)
			}
			if out := jsonText(c[4].Output); !c[4].Success || len(out) > 4096+512 {
				t.Errorf("big: %d bytes, success %v", len(out), c[4].Success)
			}
			if c[5].Success || c[5].Error == nil || !strings.Contains(*c[5].Error, "boom") {
				t.Errorf("fail: %+v", c[5])
			}
			if c[6].Success || c[6].Error == nil || *c[6].Error != "denied by reviewer: not now" {
				t.Errorf("denied add: %+v", c[6])
			}
			if out := jsonText(c[7].Output); !c[7].Success || !strings.Contains(out, "held [REDACTED:") || strings.Contains(out, leakAWS) {
				t.Errorf("approved echo: %.300s", out)
			}

			// What the provider received.
			reqs := fake.requests(t)
			if len(reqs) != 3 {
				t.Fatalf("model calls: want 3, got %d", len(reqs))
			}
			for i, body := range reqs {
				checkAnswered(t, provider, i, body)
			}
			turns := checkAnswered(t, provider, 2, reqs[2])
			var results []wireCall
			for _, tn := range turns {
				results = append(results, tn.Results...)
			}
			if len(results) != 8 {
				t.Fatalf("the last request carries %d results, want 8: %+v", len(results), results)
			}
			for j, r := range results {
				if strings.Contains(r.Text, leakAWS) || strings.Contains(r.Text, "s3cr3t-arg") {
					t.Errorf("result %d fed back holds a secret: %.300s", j, r.Text)
				}
			}
			if !strings.Contains(results[2].Text, "deny-me is not allowed") || !strings.Contains(results[5].Text, "boom") || !strings.Contains(results[6].Text, "denied by reviewer: not now") {
				t.Errorf("results fed back: deny %.200q, fail %.200q, add %.200q", results[2].Text, results[5].Text, results[6].Text)
			}
			if !strings.Contains(results[1].Text, alias("sx/big")) {
				t.Errorf("the search went back as %.300s, not naming the tool as offered, %s", results[1].Text, alias("sx/big"))
			}
			// The approved call's output is held to its share of the context
			// window like the turn's others.
			if len(results[7].Text) > 16<<10 || !strings.Contains(results[7].Text, "toolrouterd cut") {
				t.Errorf("the approved long echo went back as %d bytes: %.200s", len(results[7].Text), results[7].Text)
			}
			if len(results[3].Text) > 16<<10 || !strings.Contains(results[3].Text, "toolrouterd cut") {
				t.Errorf("the long say went back as %d bytes: %.200s", len(results[3].Text), results[3].Text)
			}
			if len(results[4].Text) > 8<<10 {
				t.Errorf("big went back as %d bytes", len(results[4].Text))
			}
			if provider == "anthropic" || provider == "bedrock" || provider == "gemini" {
				for j, r := range results {
					if wantErr := j == 2 || j == 5 || j == 6; r.IsError != wantErr {
						t.Errorf("result %d (%s) error flag %v, want %v: %.200s", j, names[j], r.IsError, wantErr, r.Text)
					}
				}
			}
			// After the searches, the found tools are offered by name, and
			// still after the run resumed.
			for i := 1; i <= 2; i++ {
				if got := offeredAny(provider, reqs[i]); !slices.Contains(got, "say") || !slices.Contains(got, alias("sx/big")) {
					t.Errorf("request %d offers %v, not the found tools", i, got)
				}
			}
		})
	}
}

// offeredAny lists the tool names a request of provider's format offers.
func offeredAny(provider string, body map[string]any) []string {
	var out []string
	each := func(l any, f func(map[string]any) any) {
		list, _ := l.([]any)
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				if n, ok := f(m).(string); ok {
					out = append(out, n)
				}
			}
		}
	}
	get := func(m map[string]any, path ...string) any {
		var v any = m
		for _, k := range path {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		return v
	}
	switch provider {
	case "openai", "ollama":
		each(body["tools"], func(m map[string]any) any { return get(m, "function", "name") })
	case "anthropic", "openai-responses":
		each(body["tools"], func(m map[string]any) any { return m["name"] })
	case "gemini":
		list, _ := body["tools"].([]any)
		for _, tl := range list {
			tl, _ := tl.(map[string]any)
			each(tl["functionDeclarations"], func(m map[string]any) any { return m["name"] })
		}
	case "bedrock":
		each(get(body, "toolConfig", "tools"), func(m map[string]any) any { return get(m, "toolSpec", "name") })
	}
	return out
}
