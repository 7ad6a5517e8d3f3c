package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// TestKillDuringBurstSQLite and TestKillDuringBurstPostgres: kill -9 the
// service while routes (half of them keyed) are being answered, restart
// it on the same store and continue: no sequence is handed out twice, and
// every keyed request that was answered replays its answer (docs/operations.md
// "Storage and durability").
func TestKillDuringBurstSQLite(t *testing.T) {
	killDuringBurst(t, "sqlite://"+filepath.Join(t.TempDir(), "toolrouter.db"))
}

func TestKillDuringBurstPostgres(t *testing.T) {
	killDuringBurst(t, pgtest.Start(t))
}

func killDuringBurst(t *testing.T, storeURL string) {
	tools := startTools(t)
	reg := fmt.Sprintf("tools:\n  - {name: echo, endpoint: http://%s/echo}\n", tools.addr)
	env := []string{"TOOLROUTER_STORE=" + storeURL, "TOOLROUTER_LOG_LEVEL=warn"}
	answered, second := crashBurst(t, reg, env, "burst", 8, 60, func(w, i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("k-%d-%d", w, i)
		}
		return ""
	})
	seen := map[int64]bool{}
	for _, a := range answered {
		if seen[a.seq] {
			t.Errorf("sequence %d answered twice before the crash", a.seq)
		}
		seen[a.seq] = true
		if a.key == "" {
			continue
		}
		status, h, body, err := crashRoute(second.URL(), "burst", a.key)
		if err != nil || status != 200 || h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(body, a.body) {
			t.Errorf("key %s answered before the crash: after it %d %v %s, %v; want its answer replayed", a.key, status, h.Get("Idempotent-Replayed"), body, err)
		}
	}
	for i := 0; i < 20; i++ {
		res := do(t, "POST", second.URL()+"/route", map[string]any{"plan_id": "burst", "tool_call": map[string]any{"name": "echo", "arguments": "{}"}}).JSON(t)
		seq := int64(res["sequence"].(float64))
		if seen[seq] {
			t.Fatalf("sequence %d handed out again after the restart", seq)
		}
		seen[seq] = true
	}
}

// crashAnswer is a POST /route answered 200 before the kill.
type crashAnswer struct {
	key  string // its Idempotency-Key, "" for none
	id   string // tool_call_id
	seq  int64  // sequence
	body []byte // the whole answer
}

// crashBurst starts toolrouterd with reg and env and sends POST /route
// (plan plan, tool echo, arguments {"k":key}) from workers goroutines,
// call i of worker w with the Idempotency-Key key(w, i) ("" for none);
// once enough calls were answered 200 it kills the process with SIGKILL,
// waits for every worker to see the connection fail, and starts toolrouterd
// again with the same registry and env. It returns the calls answered
// before the kill and the second process.
func crashBurst(t *testing.T, reg string, env []string, plan string, workers, enough int, key func(w, i int) string) ([]crashAnswer, *proc) {
	t.Helper()
	first, _ := startRouter(t, reg, env...)
	var (
		mu       sync.Mutex
		answered []crashAnswer
		done     = make(chan struct{})
		once     sync.Once
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				k := key(w, i)
				status, _, body, err := crashRoute(first.URL(), plan, k)
				if err != nil {
					return // killed
				}
				var res struct {
					ToolCallID string `json:"tool_call_id"`
					Sequence   int64  `json:"sequence"`
				}
				if status != 200 || json.Unmarshal(body, &res) != nil {
					continue
				}
				mu.Lock()
				answered = append(answered, crashAnswer{k, res.ToolCallID, res.Sequence, body})
				if len(answered) >= enough {
					once.Do(func() { close(done) })
				}
				mu.Unlock()
			}
		}()
	}
	<-done
	first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.done
	wg.Wait()
	second, _ := startRouter(t, reg, env...)
	return answered, second
}

// crashRoute sends one POST /route of echo to url, with the Idempotency-Key
// key unless it is "", and returns the answer.
func crashRoute(url, plan, key string) (int, http.Header, []byte, error) {
	raw, _ := json.Marshal(map[string]any{"plan_id": plan, "tool_call": map[string]any{"name": "echo", "arguments": `{"k":"` + key + `"}`}})
	req, _ := http.NewRequest("POST", url+"/route", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}
