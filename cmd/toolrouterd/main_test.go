package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunServesUntilCancelled starts the whole service in-process with its
// own environment (a map, not the process's) on 127.0.0.1:0, reads the
// bound address from the "listening" log line, waits for /healthz, routes a
// call to a real tool endpoint, then cancels ctx: run returns nil.
func TestRunServesUntilCancelled(t *testing.T) {
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, r.Body) // the output is the arguments
	}))
	defer tool.Close()
	reg := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(reg, []byte(fmt.Sprintf("tools:\n  - name: test/echo\n    endpoint: %s/echo\n", tool.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"TOOLROUTER_ADDR":       "127.0.0.1:0",
		"TOOLROUTER_STORE":      "memory://",
		"TOOLROUTER_REGISTRY":   reg,
		"TOOLROUTER_API_KEYS":   "k1",
		"TOOLROUTER_DEBUG_ADDR": "127.0.0.1:0",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs, logw := io.Pipe()
	addr, debugAddr := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var line struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				switch {
				case line.Message == "listening":
					addr <- line.Addr
				case strings.HasPrefix(line.Message, "profiler listening"):
					debugAddr <- line.Addr
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"toolrouterd"}, lookup, io.Discard, logw)
		logw.Close()
	}()

	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line within 30s")
	}
	resp, err := http.Get(base + "/healthz") // listening: the first request is served
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	// TOOLROUTER_DEBUG_ADDR: the profiler on its own listener, not on
	// the service's.
	select {
	case a := <-debugAddr:
		resp, err = http.Get("http://" + a + "/debug/pprof/cmdline")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /debug/pprof/cmdline on TOOLROUTER_DEBUG_ADDR: %v %v", resp, err)
		}
		resp.Body.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("no profiler listening line within 30s")
	}
	if resp, err = http.Get(base + "/debug/pprof/cmdline"); err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("GET /debug/pprof/cmdline on TOOLROUTER_ADDR: %v %v, want no profiler there", resp, err)
	}
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodPost, base+"/route", strings.NewReader(`{"plan_id":"p1","tool_call":{"name":"test/echo","arguments":{"msg":"hi"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Success  bool              `json:"success"`
		Sequence int               `json:"sequence"`
		Output   map[string]string `json:"output"`
	}
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !res.Success || res.Output["msg"] != "hi" {
		t.Fatalf("POST /route: %d %+v %v", resp.StatusCode, res, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of cancel")
	}
}
