package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeBytes is what process pid has written to storage so far
// (/proc/PID/io write_bytes: files, not sockets or pipes).
func writeBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatalf("no I/O accounting: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "write_bytes: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no write_bytes in /proc/%d/io:\n%s", pid, b)
	return 0
}

// TestRunWritesItsDocumentOnce (issue 14 item 6): a run on SQLite with a
// 271 KB tool output, a 271 KB final answer, and heartbeats every 100 ms
// through 6 s of slow tool turns writes a bounded multiple of its size to storage, not the
// whole document again at every heartbeat (340 MB before).
func TestRunWritesItsDocumentOnce(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	db := filepath.Join(t.TempDir(), "tr.db")
	rt, _ := startRouter(t, runsRegistry(t, tools.addr, fake), "TOOLROUTER_STORE=sqlite://"+db,
		"TOOLROUTER_RUN_HEARTBEAT=100ms", "TOOLROUTER_LOG_LEVEL=warn")
	answer := strings.Repeat("The answer is long. ", 271*1024/20) // 271 KB
	// A 271 KB tool output first, so that every heartbeat after it would
	// carry it if the run were rewritten whole.
	turns := []map[string]any{{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": answer})}}}
	for range 4 { // each about 1.5 s of heartbeats
		turns = append(turns, map[string]any{"tool_calls": []any{toolCall("test/slow", map[string]any{"ms": 1500})}})
	}
	fake.script(t, append(turns, map[string]any{"text": answer})...)

	before := writeBytes(t, rt.cmd.Process.Pid)
	start := time.Now()
	resp := do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "go", "max_iterations": 10})
	if run := decodeRun(t, resp); run.Status != "completed" || !strings.Contains(string(resp.Body), "The answer is long.") {
		t.Fatalf("run: %.300s", resp.Body)
	}
	written := writeBytes(t, rt.cmd.Process.Pid) - before
	t.Logf("run of %s with a %d-byte answer: %d bytes written to storage (%.1f× the answer)",
		time.Since(start).Round(time.Millisecond), len(answer), written, float64(written)/float64(len(answer)))
	// Today each of the 6 steps saves the run whole (about 14 copies of
	// the output, in the WAL and again at a checkpoint: ~29× the answer);
	// the 60 heartbeats add nothing. 64× fails if heartbeats rewrote the
	// run (60 × 2 copies at least).
	if limit := int64(64 * len(answer)); written > limit {
		t.Errorf("a run with a %d-byte answer wrote %d bytes (limit %d)", len(answer), written, limit)
	}
}
