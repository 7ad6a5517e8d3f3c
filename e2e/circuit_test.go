package e2e_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// TestCircuitBreakerThroughTheBinary: a dead tool endpoint opens its
// host's circuit after 3 connection failures; calls then fail fast as
// resource without a connection attempt, visible in /metrics and /readyz
// (still ready); once the endpoint is back, the first call after the
// cool-down is its trial and closes the circuit (issue 21, item 16).
func TestCircuitBreakerThroughTheBinary(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // dead until revived below
	reg := fmt.Sprintf("tools:\n  - name: flaky\n    endpoint: http://%s/echo\n    circuit: {failures: 3, cooldown: 2s}\n", addr)
	rt, _ := startRouter(t, reg, "TOOLROUTER_LOG_LEVEL=info")
	route := func() map[string]any {
		return do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "cb", "tool_call": map[string]any{"name": "flaky", "arguments": map[string]any{}}}).JSON(t)
	}
	for i := range 3 {
		if res := route(); res["success"] != false || !strings.Contains(fmt.Sprint(res["error"]), "unreachable") {
			t.Fatalf("call %d to the dead endpoint: %v", i, res)
		}
	}
	res := route()
	if res["error_category"] != "resource" || !strings.HasPrefix(fmt.Sprint(res["error"]), "circuit open for tool endpoint host "+addr+" after 3 consecutive connection failures or timeouts, retry after ") {
		t.Fatalf("after 3 failures: %v", res)
	}
	metrics := string(do(t, "GET", rt.URL()+"/metrics", nil).Body)
	for _, want := range []string{`toolrouter_circuit_state{kind="http",target="` + addr + `"} 2`, `toolrouter_circuit_opened_total{kind="http",target="` + addr + `"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "circuit"))
		}
	}
	ready := do(t, "GET", rt.URL()+"/readyz", nil)
	if checks, _ := ready.JSON(t)["checks"].(map[string]any); ready.Status != http.StatusOK || !strings.HasPrefix(fmt.Sprint(checks["circuit http "+addr]), "open, retry after ") {
		t.Errorf("/readyz: %d %s", ready.Status, ready.Body)
	}

	// Revived: calls fail fast until the cool-down is over; the first to
	// reach the endpoint is the trial, and succeeds.
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	if srv.Listener, err = net.Listen("tcp", addr); err != nil {
		t.Fatalf("revive %s: %v", addr, err)
	}
	srv.Start()
	defer srv.Close()
	fastFails := 0
	poll.Until(t, 10*time.Second, func() error {
		res := route()
		if res["success"] == true {
			return nil
		}
		if !strings.HasPrefix(fmt.Sprint(res["error"]), "circuit open") {
			t.Fatalf("while open: %v", res)
		}
		fastFails++
		return fmt.Errorf("still open: %v", res["error"])
	})
	if hits.Load() != 1 {
		t.Errorf("the endpoint got %d requests by the first success, want 1 (the trial); %d calls failed fast before", hits.Load(), fastFails)
	}
	if res := route(); res["success"] != true {
		t.Errorf("closed: %v", res)
	}
	metrics = string(do(t, "GET", rt.URL()+"/metrics", nil).Body)
	if !strings.Contains(metrics, `toolrouter_circuit_state{kind="http",target="`+addr+`"} 0`) {
		t.Errorf("state after closing:\n%s", grepLines(metrics, "circuit"))
	}
	if checks, _ := do(t, "GET", rt.URL()+"/readyz", nil).JSON(t)["checks"].(map[string]any); checks["circuit http "+addr] != nil {
		t.Errorf("/readyz still lists the circuit: %v", checks)
	}
}
