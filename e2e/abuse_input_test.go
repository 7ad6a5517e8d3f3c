package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// abuseTools serves tool replies that are JSON in name only.
func abuseTools(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/utf8", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{\"text\":\"a\xffb\"}"))
	})
	mux.HandleFunc("/textjson", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(`{"ok":true}`))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Issue 14, items 3 and 10, through the binary: invalid UTF-8 in a tool's
// output, JSON sent as text/plain, control characters in plan_id and
// Idempotency-Key, OPTIONS without the key, /mcp's own errors.
func TestAbuseInput(t *testing.T) {
	tools := abuseTools(t)
	reg := fmt.Sprintf("tools:\n  - {name: utf8, endpoint: %s/utf8}\n  - {name: textjson, endpoint: %s/textjson}\n", tools.URL, tools.URL)
	rt, _ := startRouter(t, reg, "TOOLROUTER_API_KEYS=k1")
	authz := []string{"Authorization", "Bearer k1"}
	call := func(name string) map[string]any {
		return map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}
	}

	t.Run("invalid UTF-8 output is replaced in output and provider_result, and noted", func(t *testing.T) {
		resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "u", "tool_call": call("utf8")}, authz...)
		if resp.Status != 200 || !utf8.Valid(resp.Body) {
			t.Fatalf("%d, valid UTF-8 %v: %q", resp.Status, utf8.Valid(resp.Body), resp.Body)
		}
		var res struct {
			Success        bool
			Output         struct{ Text string }
			Notes          []string
			ProviderResult struct{ Content string } `json:"provider_result"`
		}
		if err := json.Unmarshal(resp.Body, &res); err != nil {
			t.Fatal(err)
		}
		if !res.Success || res.Output.Text != "a\uFFFDb" || !strings.Contains(res.ProviderResult.Content, "\"a\uFFFDb\"") {
			t.Fatalf("output %q, provider_result %q", res.Output.Text, res.ProviderResult.Content)
		}
		if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "invalid UTF-8") {
			t.Fatalf("notes %q, want one about invalid UTF-8", res.Notes)
		}
	})

	t.Run("a JSON body sent as text/plain is a non-JSON reply", func(t *testing.T) {
		m := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "u", "tool_call": call("textjson")}, authz...).JSON(t)
		if m["success"] != false || m["error_category"] != "parse" || !strings.Contains(fmt.Sprint(m["error"]), "non-JSON reply (Content-Type text/plain") {
			t.Fatalf("%v", m)
		}
	})

	t.Run("control characters in plan_id are 400 naming it, and burn no sequence", func(t *testing.T) {
		for _, path := range []string{"/route", "/route/batch"} {
			body := map[string]any{"plan_id": "p\n1", "tool_call": call("utf8")}
			if path == "/route/batch" {
				body = map[string]any{"plan_id": "p\t1", "tool_calls": []any{call("utf8")}}
			}
			resp := do(t, "POST", rt.URL()+path, body, authz...)
			m := resp.JSON(t)
			if resp.Status != 400 || m["field"] != "plan_id" || !strings.Contains(fmt.Sprint(m["detail"]), "plan_id: must not contain control characters") {
				t.Fatalf("%s: %d %v", path, resp.Status, m)
			}
		}
		resp := do(t, "GET", rt.URL()+"/runs?plan_id=p%0A1", nil, authz...)
		if resp.Status != 400 || resp.JSON(t)["field"] != "plan_id" {
			t.Fatalf("GET /runs: %d %s", resp.Status, resp.Body)
		}
	})

	t.Run("control characters in Idempotency-Key are 400 naming it", func(t *testing.T) {
		resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "k", "tool_call": call("utf8")}, append(authz, "Idempotency-Key", "a\tb")...)
		if m := resp.JSON(t); resp.Status != 400 || m["field"] != "Idempotency-Key" {
			t.Fatalf("%d %v", resp.Status, m)
		}
	})

	t.Run("OPTIONS on an authenticated route needs the key", func(t *testing.T) {
		if resp := do(t, "OPTIONS", rt.URL()+"/route", nil); resp.Status != 401 {
			t.Fatalf("without the key: %d %s", resp.Status, resp.Body)
		}
		if resp := do(t, "OPTIONS", rt.URL()+"/runs/abc", nil); resp.Status != 401 {
			t.Fatalf("without the key: %d %s", resp.Status, resp.Body)
		}
		if resp := do(t, "OPTIONS", rt.URL()+"/route", nil, authz...); resp.Status != 204 || resp.Header.Get("Allow") != "POST, OPTIONS" {
			t.Fatalf("with the key: %d Allow %q", resp.Status, resp.Header.Get("Allow"))
		}
		if resp := do(t, "OPTIONS", rt.URL()+"/healthz", nil); resp.Status != 204 {
			t.Fatalf("public path: %d", resp.Status)
		}
	})

	t.Run("/mcp answers its errors as problem+json", func(t *testing.T) {
		resp := do(t, "GET", rt.URL()+"/mcp", nil, append(authz, "Accept", "text/event-stream")...)
		if ct := resp.Header.Get("Content-Type"); resp.Status != 400 || ct != "application/problem+json" {
			t.Fatalf("%d %q: %s", resp.Status, ct, resp.Body)
		}
		if m := resp.JSON(t); !strings.Contains(fmt.Sprint(m["detail"]), "Mcp-Session-Id") {
			t.Fatalf("%v", m)
		}
	})
}

// Issue 14, items 8 and 10: `toolrouterd check` rejects bad ports and
// credentials in endpoint URLs; a registry that is /dev/zero is refused at
// start, and on SIGHUP the registry in force stays.
func TestAbuseRegistryFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("tools:\n  - {name: a, endpoint: 'http://127.0.0.1:99999/a'}\n  - {name: b, endpoint: 'http://bob:hunter2@tools.example/b'}\n"), 0o600)
	out, err := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "port 99999 is outside 1..65535") || !strings.Contains(string(out), "credentials written in the URL") || strings.Contains(string(out), "hunter2") {
		t.Fatalf("check: %v\n%s", err, out)
	}
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("tools:\n  - {name: a, endpoint: 'http://bob:${A_PASS}@${A_HOST}:9001/a'}\n"), 0o600)
	cmd := exec.Command(filepath.Join(binDir, "toolrouterd"), "check", good)
	cmd.Env = append(os.Environ(), "A_PASS=x", "A_HOST=127.0.0.1", "GORACE=atexit_sleep_ms=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("check with ${VAR} endpoint: %v\n%s", err, out)
	}

	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Fatalf("no /dev/zero: %v", err)
	}
	cmd = exec.Command(filepath.Join(binDir, "toolrouterd"))
	cmd.Env = append(os.Environ(), "TOOLROUTER_REGISTRY=/dev/zero", "TOOLROUTER_STORE=memory://", "TOOLROUTER_ADDR=127.0.0.1:0", "GORACE=atexit_sleep_ms=0")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "TOOLROUTER_REGISTRY") || !strings.Contains(string(out), "larger than 16 MiB") {
		t.Fatalf("start with /dev/zero: %v\n%s", err, out)
	}

	rt, path := startRouter(t, "tools:\n  - {name: a, endpoint: 'http://127.0.0.1:9/a'}\n")
	os.Remove(path)
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	rt.cmd.Process.Signal(syscall.SIGHUP)
	rt.waitOutput(t, "rejected reload logged", contains("registry reload rejected"))
	if !strings.Contains(rt.Output(), "larger than 16 MiB") {
		t.Fatalf("the rejection does not say why:\n%s", rt.Output())
	}
	m := do(t, "GET", rt.URL()+"/schemas/unknown", nil).JSON(t)
	if tools, _ := m["tools"].([]any); len(tools) != 1 {
		t.Fatalf("the registry in force was lost: %v", m)
	}
}
