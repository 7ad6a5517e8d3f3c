package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// vmHWM is the peak resident set size of pid in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read VmHWM: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// Issue 32, finding 6: shaping and redaction hold a small multiple of an
// output, so at the Helm chart's default memory limit (512Mi, with
// GOMEMLIMIT as the chart sets it: the limit in bytes) two concurrent
// 16 MB outputs of small numbers — one through redact_secrets, one through
// a keep budget — leave the process up and its peak RSS under the limit
// (before: 865 MiB and 747 MiB for one call each).
func TestShapingMemoryAtChartLimit(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Fatalf("this test reads VmHWM from /proc: %v", err)
	}
	const limit = 512 << 20                                         // deployments/helm/toolrouterd/values.yaml resources.limits.memory
	out := []byte("[" + strings.Repeat("7,", 8_000_000) + `"end"]`) // 16 MB, under the 16 MiB reply cap
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	}))
	defer tool.Close()
	rt := startPlain(t, fmt.Sprintf(`tools:
  - {name: redacted, endpoint: %[1]s}
  - {name: kept, endpoint: %[1]s, max_output_bytes: 8192, keep: ["$[0:20]"]}
guardrails:
  - {name: secrets, builtin: redact_secrets, tools: ["redacted"]}
`, tool.URL), "GOMEMLIMIT="+strconv.Itoa(limit), "TOOLROUTER_LOG_LEVEL=info")

	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i, name := range []string{"redacted", "kept"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"plan_id": "mem", "tool_call": map[string]any{
				"id": "call_" + name, "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}})
			resp, err := http.Post(rt.URL()+"/route", "application/json", bytes.NewReader(body))
			if err != nil {
				errs[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			var res struct {
				Success   bool
				Truncated bool
				Error     string
			}
			if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 || !res.Success ||
				res.Truncated != (name == "kept") {
				errs[i] = fmt.Sprintf("%s: status %d, %+v, %v", name, resp.StatusCode, res, err)
			}
		}()
	}
	wg.Wait()
	if err := rt.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process died: %v", err)
	}
	peak := vmHWM(t, rt.cmd.Process.Pid)
	t.Logf("two concurrent %d MB outputs (redact_secrets, keep): peak RSS %d MiB, limit %d MiB", len(out)>>20, peak>>20, limit>>20)
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if peak >= limit {
		t.Errorf("peak RSS %d MiB, at or over the chart's %d MiB limit", peak>>20, limit>>20)
	}
}
