package features_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/cucumber/godog"

	"github.com/toolrouterd/toolrouterd/internal/llm/llmtest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// initIsolationSteps are the steps of isolation.feature; they share the
// clients scenario state (clientsEnv).
func initIsolationSteps(sc *godog.ScenarioContext) {
	var runID, replayed string
	sc.Step(`^an admin client "([^"]*)" with key "([^"]*)" and tools "([^"]*)"$`, func(ctx context.Context, name, key, tools string) error {
		e := clientsState(ctx)
		env := strings.ToUpper(name) + "_KEY"
		e.keys[env] = key
		q := splitList(tools)
		for i := range q {
			q[i] = fmt.Sprintf("%q", q[i])
		}
		e.clients = append(e.clients, fmt.Sprintf("  - {name: %s, key_env: %s, admin: true, tools: [%s], models: [\"*\"]}\n", name, env, strings.Join(q, ", ")))
		return nil
	})
	sc.Step(`^client "([^"]*)" routes a call to "([^"]*)" under plan "([^"]*)"$`, func(ctx context.Context, client, tool, plan string) error {
		e := clientsState(ctx)
		return e.call(e.key(client), "POST", "/route", map[string]any{"plan_id": plan, "tool_call": map[string]any{"name": tool, "arguments": "{}"}})
	})
	sc.Step(`^the result is sequence (\d+) of plan "([^"]*)"$`, func(ctx context.Context, seq int64, plan string) error {
		e := clientsState(ctx)
		want, _ := toolrouter.ToolCallID(plan, seq)
		if e.status != 200 || e.last["sequence"] != float64(seq) || e.last["tool_call_id"] != want || e.last["plan_id"] != plan {
			return fmt.Errorf("want sequence %d (%s); HTTP %d: %s", seq, want, e.status, e.body)
		}
		return nil
	})
	sc.Step(`^the model answers "([^"]*)"$`, func(ctx context.Context, text string) error {
		e := clientsState(ctx)
		if err := e.start(); err != nil {
			return err
		}
		e.fake.Script(llmtest.Turn{Text: text})
		return nil
	})
	sc.Step(`^client "([^"]*)" starts a run under plan "([^"]*)"$`, func(ctx context.Context, client, plan string) error {
		e := clientsState(ctx)
		err := e.call(e.key(client), "POST", "/runs", map[string]any{"prompt": "go", "context": map[string]any{"plan_id": plan}})
		runID, _ = e.last["run_id"].(string)
		return err
	})
	sc.Step(`^the answer status is (\d+)$`, func(ctx context.Context, status int) error {
		e := clientsState(ctx)
		if e.status != status {
			return fmt.Errorf("HTTP %d, want %d: %s", e.status, status, e.body)
		}
		return nil
	})
	sc.Step(`^client "([^"]*)" reads that run$`, func(ctx context.Context, client string) error {
		e := clientsState(ctx)
		return e.call(e.key(client), "GET", "/runs/"+runID, nil)
	})
	sc.Step(`^client "([^"]*)" lists the runs of plan "([^"]*)"$`, func(ctx context.Context, client, plan string) error {
		e := clientsState(ctx)
		return e.call(e.key(client), "GET", "/runs?plan_id="+url.QueryEscape(plan), nil)
	})
	sc.Step(`^the run list has (\d+) runs$`, func(ctx context.Context, n int) error {
		e := clientsState(ctx)
		runs, ok := e.last["runs"].([]any)
		if e.status != 200 || !ok || len(runs) != n {
			return fmt.Errorf("want %d runs; HTTP %d: %s", n, e.status, e.body)
		}
		return nil
	})
	sc.Step(`^client "([^"]*)" routes a call to "([^"]*)" with Idempotency-Key "([^"]*)"$`, func(ctx context.Context, client, tool, key string) error {
		e := clientsState(ctx)
		if err := e.start(); err != nil {
			return err
		}
		body := `{"plan_id":"p","tool_call":{"name":"` + tool + `","arguments":"{}"}}`
		req, _ := http.NewRequest("POST", e.api.URL+"/route", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.key(client))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		e.body, _ = io.ReadAll(resp.Body)
		e.status, replayed = resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
		if e.status != 200 {
			return fmt.Errorf("HTTP %d: %s", e.status, e.body)
		}
		return nil
	})
	sc.Step(`^the answer was (not )?replayed$`, func(ctx context.Context, not string) error {
		if want := not == ""; (replayed == "true") != want {
			return fmt.Errorf("Idempotent-Replayed: %q", replayed)
		}
		return nil
	})
	onSession := func(ctx context.Context, client, method, body string) error {
		e := clientsState(ctx)
		if e.session == nil {
			return fmt.Errorf("no MCP session open")
		}
		req, _ := http.NewRequest(method, e.api.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.key(client))
		req.Header.Set("Mcp-Session-Id", e.session.ID())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		e.body, _ = io.ReadAll(resp.Body)
		e.status = resp.StatusCode
		return nil
	}
	sc.Step(`^client "([^"]*)" lists tools on that MCP session$`, func(ctx context.Context, client string) error {
		return onSession(ctx, client, "POST", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	})
	sc.Step(`^client "([^"]*)" deletes that MCP session$`, func(ctx context.Context, client string) error {
		return onSession(ctx, client, "DELETE", "")
	})
	sc.Step(`^the MCP result is a success$`, func(ctx context.Context) error {
		res := clientsState(ctx).mcpRes
		if res == nil || res.IsError {
			return fmt.Errorf("MCP result: %+v", res)
		}
		return nil
	})
	sc.Step(`^client "([^"]*)" reads the audit trail of tool "([^"]*)"$`, func(ctx context.Context, client, tool string) error {
		e := clientsState(ctx)
		return e.call(e.key(client), "GET", "/audit?tool="+url.QueryEscape(tool), nil)
	})
	sc.Step(`^the audit records are "([^"]*)"$`, func(ctx context.Context, want string) error {
		e := clientsState(ctx)
		var got []string
		recs, _ := e.last["records"].([]any)
		for _, r := range recs {
			m := r.(map[string]any)
			got = append(got, fmt.Sprint(m["client"], " ", m["outcome"]))
		}
		return sameList(got, want)
	})
}
