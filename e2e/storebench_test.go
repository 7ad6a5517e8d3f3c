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
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// TestStoreThroughput measures routes per second through the real binary
// for each store: three replicas on one PostgreSQL database, one node on
// SQLite, and three replicas each with its own memory store (the baseline:
// no durable state at all), for one plan (every route contends for the
// same sequence row) and for 1000 plans. It runs only under make
// bench-store (TOOLROUTER_BENCH=1): a measurement, not a test.
func TestStoreThroughput(t *testing.T) {
	if os.Getenv("TOOLROUTER_BENCH") == "" {
		t.Skip("a benchmark: run make bench-store")
	}
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	defer tool.Close()
	reg := fmt.Sprintf("tools:\n  - {name: echo, endpoint: %s}\n", tool.URL)
	body := filepath.Join(t.TempDir(), "body.json")
	os.WriteFile(body, []byte(`{"plan_id":"{{plan}}","tool_call":{"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\"msg\":\"hi\"}"}}}`), 0o600)

	type setup struct {
		name     string
		replicas int
		store    func() string
	}
	setups := []setup{
		{"memory (3 independent replicas)", 3, func() string { return "memory://" }},
		{"sqlite (1 node)", 1, func() string { return "sqlite://" + filepath.Join(t.TempDir(), "b.db") }},
		{"postgres (3 replicas, one database)", 3, func() string { return pgtest.Start(t) }},
	}
	fmt.Printf("\n%-38s %8s %12s %10s %10s\n", "store", "plans", "routes/s", "p50 ms", "p99 ms")
	for _, s := range setups {
		storeURL := s.store()
		var reps []*proc
		for i := 0; i < s.replicas; i++ {
			p, _ := startRouter(t, reg, "TOOLROUTER_STORE="+storeURL, "TOOLROUTER_LOG_LEVEL=warn")
			reps = append(reps, p)
		}
		for _, plans := range []int{1, 1000} {
			args := []string{"-name", s.name, "-url", reps[0].URL() + "/route", "-body", body,
				"-plans", fmt.Sprint(plans), "-duration", "8s", "-warmup", "1s", "-concurrency", "24"}
			for _, r := range reps[1:] {
				args = append(args, "-also-url", r.URL()+"/route")
			}
			out, err := exec.Command(filepath.Join(binDir, "loadgen"), args...).Output()
			if err != nil {
				t.Fatalf("loadgen: %v\n%s", err, out)
			}
			var res struct {
				RPS    float64 `json:"rps"`
				P50    float64 `json:"p50_ms"`
				P99    float64 `json:"p99_ms"`
				Errors int64   `json:"errors"`
				Non2xx int64   `json:"non2xx"`
			}
			json.Unmarshal(out, &res)
			if res.Errors+res.Non2xx > 0 {
				t.Errorf("%s: %d errors, %d non-2xx: %s", s.name, res.Errors, res.Non2xx, strings.TrimSpace(string(out)))
			}
			fmt.Printf("%-38s %8d %12.0f %10.2f %10.2f\n", s.name, plans, res.RPS, res.P50, res.P99)
		}
	}
	fmt.Println("(2 cores shared by the load generator, every replica, the tool and PostgreSQL)")
}
