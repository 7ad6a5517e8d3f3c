package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// start runs run() in the background and returns the base_url it prints.
func start(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("run did not stop")
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			line <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case l := <-line:
		_, url, ok := strings.Cut(l, "base_url=")
		if !ok {
			t.Fatalf("first line %q", l)
		}
		return url
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no base_url line")
	}
	return ""
}

func postJSON(t *testing.T, url string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestRunOpenAIWithScript(t *testing.T) {
	script := filepath.Join(t.TempDir(), "turns.json")
	if err := os.WriteFile(script, []byte(`[{"tool_calls":[{"name":"test_echo","arguments":{"msg":"hi"}}]},{"text":"Final answer after tool call"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := start(t, "-provider", "openai", "-addr", "127.0.0.1:0", "-script", script, "-api-key", "sk-x", "-model", "gpt-4o")
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("base_url %q", base)
	}
	auth := map[string]string{"Authorization": "Bearer sk-x"}
	status, body := postJSON(t, base+"/chat/completions", auth, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("%d %v", status, body)
	}
	call := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	id := call["id"].(string)
	status, body = postJSON(t, base+"/chat/completions", auth, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"test_echo","arguments":"{\"msg\":\"hi\"}"}}]},
		{"role":"tool","tool_call_id":"`+id+`","content":"hi"}]}`)
	if status != 200 || body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] != "Final answer after tool call" {
		t.Fatalf("%d %v", status, body)
	}
	// A bad request shows up in /_fakellm/rejections.
	origin := strings.TrimSuffix(base, "/v1")
	if status, _ := postJSON(t, base+"/chat/completions", nil, `{"model":"gpt-4o","messages":[]}`); status != 401 {
		t.Errorf("no key: %d", status)
	}
	var rejections []string
	getJSON(t, origin+"/_fakellm/rejections", &rejections)
	if len(rejections) != 1 || !strings.Contains(rejections[0], "didn't provide an API key") {
		t.Errorf("rejections %q", rejections)
	}
	var requests []map[string]any
	getJSON(t, origin+"/_fakellm/requests", &requests)
	if len(requests) != 3 || requests[0]["path"] != "/v1/chat/completions" || !strings.Contains(requests[0]["raw"].(string), `"gpt-4o"`) {
		t.Errorf("requests %v", requests)
	}
}

func TestRunAlwaysTool(t *testing.T) {
	base := start(t, "-provider", "ollama", "-always-tool", "test/echo", "-always-args", `{"msg":"again"}`)
	for range 2 {
		status, body := postJSON(t, base+"/api/chat", nil, `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
		calls, _ := body["message"].(map[string]any)["tool_calls"].([]any)
		if status != 200 || len(calls) != 1 || calls[0].(map[string]any)["function"].(map[string]any)["arguments"].(map[string]any)["msg"] != "again" {
			t.Fatalf("%d %v", status, body)
		}
	}
	// Turns can be added while it runs.
	resp, err := http.Post(base+"/_fakellm/script", "application/json", bytes.NewReader([]byte(`[{"text":"stop now"}]`)))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	_, body := postJSON(t, base+"/api/chat", nil, `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	if body["message"].(map[string]any)["content"] != "stop now" {
		t.Errorf("%v", body)
	}
}

func TestRunAnthropicBaseURL(t *testing.T) {
	base := start(t, "-provider", "anthropic")
	status, body := postJSON(t, base+"/v1/messages", map[string]string{"anthropic-version": "2023-06-01"},
		`{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || body["stop_reason"] != "end_turn" {
		t.Errorf("%d %v", status, body)
	}
}

func TestRunBadArguments(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`[{"txt":"typo"}]`), 0o644)
	for _, args := range [][]string{
		{},
		{"-provider", "vertex"},
		{"-provider", "openai", "-script", filepath.Join(dir, "missing.json")},
		{"-provider", "openai", "-script", bad},
		{"-provider", "openai", "-always-tool", "x", "-always-args", "[1]"},
		{"-provider", "openai", "-addr", "not-an-address"},
		{"-provider", "openai", "extra"},
		{"-provider", "anthropic", "-demo"},
		{"-provider", "openai", "-demo", "-always-tool", "x"},
		{"-nope"},
	} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// The new provider kinds serve their own endpoints.
func TestRunNewProviders(t *testing.T) {
	for p, path := range map[string]string{"openai-responses": "/v1/responses", "gemini": "/v1beta/models/m:generateContent", "bedrock": "/model/m/converse"} {
		base := start(t, "-provider", p)
		resp, err := http.Post(strings.TrimSuffix(base, "/v1")+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// {} is off-spec for each (no input, no contents, no signature):
		// refused with the API's own client error.
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: POST %s {}: want a 4xx, got %s", p, path, resp.Status)
		}
	}
}

// TestRunDemo: -demo plays the offline quickstart's model: the user's sum
// becomes a call of the offered tool with number parameters a and b, the
// tool's answer becomes the text; other questions get the help text.
func TestRunDemo(t *testing.T) {
	base := start(t, "-provider", "openai", "-demo")
	tools := `[{"type":"function","function":{"name":"test_echo_8a21e386","parameters":{"type":"object","properties":{"msg":{"type":"string"}}}}},
		{"type":"function","function":{"name":"math_add_bc986fc6","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}}}]`
	user := `{"role":"user","content":"What is 2 + 3?"}`
	status, body := postJSON(t, base+"/chat/completions", nil, `{"model":"m","messages":[`+user+`],"tools":`+tools+`}`)
	if status != 200 {
		t.Fatalf("%d %v", status, body)
	}
	msg := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	calls, _ := msg["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("want one tool call, got %v", msg)
	}
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	var args map[string]float64
	if fn["name"] != "math_add_bc986fc6" || json.Unmarshal([]byte(fn["arguments"].(string)), &args) != nil || args["a"] != 2 || args["b"] != 3 {
		t.Fatalf("call %v, want math_add_bc986fc6 with a=2, b=3", fn)
	}
	turn, _ := json.Marshal(msg)
	id := calls[0].(map[string]any)["id"].(string)
	status, body = postJSON(t, base+"/chat/completions", nil, `{"model":"m","messages":[`+user+`,`+string(turn)+
		`,{"role":"tool","tool_call_id":"`+id+`","content":"{\"sum\":5}"}],"tools":`+tools+`}`)
	if got := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; status != 200 || got != "2 + 3 = 5" {
		t.Fatalf("%d %v, want the text 2 + 3 = 5", status, body)
	}

	// Another question, or no adding tool: a note, no call.
	for _, req := range []string{
		`{"model":"m","messages":[{"role":"user","content":"Hello"}],"tools":` + tools + `}`,
		`{"model":"m","messages":[` + user + `]}`,
	} {
		_, body := postJSON(t, base+"/chat/completions", nil, req)
		msg := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		if msg["tool_calls"] != nil || !strings.Contains(msg["content"].(string), "fakellm -demo") {
			t.Errorf("%s: %v, want a note from fakellm -demo", req, msg)
		}
	}

	// Ollama's /api/chat: arguments are an object.
	ollama := start(t, "-provider", "ollama", "-demo")
	_, body = postJSON(t, ollama+"/api/chat", nil, `{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"1.5+2"},
		{"role":"assistant","content":"","tool_calls":[{"function":{"name":"math_add_bc986fc6","arguments":{"a":1.5,"b":2}}}]},
		{"role":"tool","content":"{\"sum\":3.5}"}]}`)
	if got := body["message"].(map[string]any)["content"]; got != "1.5 + 2 = 3.5" {
		t.Errorf("ollama: %v, want 1.5 + 2 = 3.5", body)
	}
}
