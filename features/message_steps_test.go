package features_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/cucumber/godog"
)

// turnKey keeps a scenario's assistant turn and its answer in the context.
type turnKey struct{}

type turnState struct {
	provider string // OpenAI Chat, Anthropic, Gemini, Responses
	message  any
	ids      []string // the provider call ids, in order
	messages []any    // the answer's messages
}

func getTurn(ctx context.Context) (context.Context, *turnState) {
	if t, ok := ctx.Value(turnKey{}).(*turnState); ok {
		return ctx, t
	}
	t := &turnState{}
	return context.WithValue(ctx, turnKey{}, t), t
}

// buildTurn returns a provider's assistant turn calling name n times, with
// text and thinking around the calls; ids are the call ids it carries.
func buildTurn(provider, name string, n int, emptyIDs bool) (any, []string, error) {
	var calls []string
	ids := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("id_%d", i)
		if emptyIDs {
			id = ""
		}
		ids[i] = id
		args := fmt.Sprintf(`{"msg":"turn %d"}`, i)
		switch provider {
		case "OpenAI Chat":
			calls = append(calls, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}`, id, name, args))
		case "Anthropic":
			calls = append(calls, fmt.Sprintf(`{"type":"thinking","thinking":"step %d","signature":"s"},{"type":"tool_use","id":%q,"name":%q,"input":%s}`, i, id, name, args))
		case "Gemini":
			calls = append(calls, fmt.Sprintf(`{"text":"step %d","thought":true},{"functionCall":{"id":%q,"name":%q,"args":%s}}`, i, id, name, args))
		case "Responses":
			calls = append(calls, fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[]},{"type":"function_call","id":"fc_%d","call_id":%q,"name":%q,"arguments":%q}`, i, i, id, name, args))
		default:
			return nil, nil, fmt.Errorf("unknown provider %q", provider)
		}
	}
	list := strings.Join(calls, ",")
	var text string
	switch provider {
	case "OpenAI Chat":
		text = `{"role":"assistant","content":"Let me check.","reasoning_content":"thinking","tool_calls":[` + list + `]}`
	case "Anthropic":
		text = `{"type":"message","role":"assistant","content":[{"type":"text","text":"Let me check."},` + list + `],"stop_reason":"tool_use"}`
	case "Gemini":
		text = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me check."},` + list + `]}}]}`
	case "Responses":
		text = `{"object":"response","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me check."}]},` + list + `]}`
	}
	var msg any
	if err := json.Unmarshal([]byte(text), &msg); err != nil {
		return nil, nil, fmt.Errorf("build %s turn: %w", provider, err)
	}
	return msg, ids, nil
}

// answered returns, in order, the call ids the messages of the answer to a
// provider's turn answer, checking their shape.
func answered(provider string, messages []any) ([]string, error) {
	var ids []string
	field := func(v any, path ...string) (string, error) {
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return "", fmt.Errorf("no %q in %v", p, v)
			}
			v = m[p]
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s is not a string: %v", strings.Join(path, "."), v)
		}
		return s, nil
	}
	switch provider {
	case "OpenAI Chat", "Responses":
		for _, m := range messages {
			path, kind, want := []string{"tool_call_id"}, "role", "tool"
			if provider == "Responses" {
				path, kind, want = []string{"call_id"}, "type", "function_call_output"
			}
			if got, _ := field(m, kind); got != want {
				return nil, fmt.Errorf("message %v: want %s %q", m, kind, want)
			}
			id, err := field(m, path...)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
	case "Anthropic", "Gemini":
		if len(messages) == 0 {
			return nil, nil
		}
		if len(messages) != 1 {
			return nil, fmt.Errorf("want one user message holding every result, got %d", len(messages))
		}
		m, _ := messages[0].(map[string]any)
		if m["role"] != "user" {
			return nil, fmt.Errorf("message role: want user, got %v", m["role"])
		}
		key, path := "content", []string{"tool_use_id"}
		if provider == "Gemini" {
			key, path = "parts", []string{"functionResponse", "id"}
		}
		blocks, _ := m[key].([]any)
		for _, b := range blocks {
			if provider == "Anthropic" {
				if typ, _ := field(b, "type"); typ != "tool_result" {
					return nil, fmt.Errorf("block %v is not a tool_result", b)
				}
			}
			id, err := field(b, path...)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func initMessageSteps(sc *godog.ScenarioContext) {
	sc.Step(`^an? (OpenAI Chat|Anthropic|Gemini|Responses) assistant turn with text, thinking and (\d+) calls? to "([^"]*)"$`, func(ctx context.Context, provider string, n int, name string) (context.Context, error) {
		ctx, t := getTurn(ctx)
		var err error
		t.provider = provider
		t.message, t.ids, err = buildTurn(provider, name, n, false)
		return ctx, err
	})
	sc.Step(`^an OpenAI Chat assistant turn whose call ids are empty strings, calling "([^"]*)"$`, func(ctx context.Context, name string) (context.Context, error) {
		ctx, t := getTurn(ctx)
		var err error
		t.provider = "OpenAI Chat"
		t.message, t.ids, err = buildTurn(t.provider, name, 1, true)
		return ctx, err
	})
	sc.Step(`^an assistant turn with text only$`, func(ctx context.Context) (context.Context, error) {
		ctx, t := getTurn(ctx)
		t.provider = "Anthropic"
		t.message = map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Done."}}}
		return ctx, nil
	})
	sc.Step(`^I route the assistant turn$`, func(ctx context.Context) error {
		s := getState(ctx)
		_, t := getTurn(ctx)
		if err := s.requirePlan(); err != nil {
			return err
		}
		r, err := s.do(http.MethodPost, "/route/batch", map[string]any{"plan_id": s.planID, "message": t.message}, "application/json")
		if err != nil {
			return err
		}
		var out struct {
			Results  []map[string]any `json:"results"`
			Messages []any            `json:"messages"`
		}
		if err := jsonOK(r, &out); err != nil {
			return fmt.Errorf("POST /route/batch with a message: %w", err)
		}
		if out.Messages == nil {
			return fmt.Errorf("POST /route/batch with a message: no messages list in %s", r.body)
		}
		for _, res := range out.Results {
			if err := checkResult(res, s.planID); err != nil {
				return err
			}
		}
		s.results, t.messages = out.Results, out.Messages
		return nil
	})
	tryTurn := func(path string, body func(s *state, t *turnState) map[string]any) func(context.Context) error {
		return func(ctx context.Context) error {
			s := getState(ctx)
			_, t := getTurn(ctx)
			if err := s.requirePlan(); err != nil {
				return err
			}
			s.errs = nil
			r, err := s.do(http.MethodPost, path, body(s, t), "application/json")
			if err != nil {
				return err
			}
			detail, err := problemDetail(r, http.StatusBadRequest)
			if err != nil {
				return err
			}
			s.errs = append(s.errs, detail)
			return nil
		}
	}
	sc.Step(`^I try to route the assistant turn as one tool call$`, tryTurn("/route", func(s *state, t *turnState) map[string]any {
		return map[string]any{"plan_id": s.planID, "tool_call": t.message}
	}))
	sc.Step(`^I try to route the assistant turn together with tool_calls$`, tryTurn("/route/batch", func(s *state, t *turnState) map[string]any {
		return map[string]any{"plan_id": s.planID, "message": t.message, "tool_calls": []any{}}
	}))
	sc.Step(`^the batch results should have sequences (\d+) to (\d+)$`, func(ctx context.Context, from, to int) error {
		s := getState(ctx)
		if len(s.results) != to-from+1 {
			return fmt.Errorf("want %d results, got %d", to-from+1, len(s.results))
		}
		for i, res := range s.results {
			if seq, _ := res["sequence"].(float64); int(seq) != from+i {
				return fmt.Errorf("result %d: sequence %v, want %d", i, res["sequence"], from+i)
			}
		}
		return nil
	})
	sc.Step(`^the answer should be (\d+) message\(s\) answering every call in order$`, func(ctx context.Context, n int) error {
		s := getState(ctx)
		_, t := getTurn(ctx)
		if len(t.messages) != n {
			return fmt.Errorf("want %d messages, got %d: %v", n, len(t.messages), t.messages)
		}
		got, err := answered(t.provider, t.messages)
		if err != nil {
			return err
		}
		if strings.Join(got, ",") != strings.Join(t.ids, ",") || len(got) != len(s.results) {
			return fmt.Errorf("answered ids %q, want the turn's %q (%d results)", got, t.ids, len(s.results))
		}
		for i, res := range s.results {
			if pid, ok := res["provider_call_id"].(string); !ok || pid != t.ids[i] {
				return errors.New("provider_call_id of result " + fmt.Sprint(i) + " is not the turn's id " + fmt.Sprintf("%q: %v", t.ids[i], res["provider_call_id"]))
			}
		}
		return nil
	})
}
