package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// startReplicas starts n toolrouterd processes sharing one store.
func startReplicas(t *testing.T, n int, registryYAML, storeURL string, env ...string) []*proc {
	t.Helper()
	var out []*proc
	for i := 0; i < n; i++ {
		p, _ := startRouter(t, registryYAML, append([]string{"TOOLROUTER_STORE=" + storeURL, "TOOLROUTER_LOG_LEVEL=warn"}, env...)...)
		out = append(out, p)
	}
	return out
}

// TestReplicasShareSequencesAndReplay: three replicas on one PostgreSQL
// database take concurrent routes for one plan: sequences are distinct and
// gap-free, ids derive from them, and an Idempotency-Key answered by one
// replica is replayed by the others without calling the tool again.
func TestReplicasShareSequencesAndReplay(t *testing.T) {
	db := pgtest.Start(t)
	var toolCalls atomic.Int32
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toolCalls.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	defer tool.Close()
	reps := startReplicas(t, 3, fmt.Sprintf("tools:\n  - {name: echo, endpoint: %s}\n", tool.URL), db)

	const perReplica = 30
	var mu sync.Mutex
	seqs := map[int64]string{}
	var wg sync.WaitGroup
	for _, rep := range reps {
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perReplica/3; i++ {
					resp := do(t, "POST", rep.URL()+"/route", map[string]any{"plan_id": "shared-plan", "tool_call": map[string]any{"name": "echo", "arguments": "{}"}})
					var res struct {
						ID  string `json:"tool_call_id"`
						Seq int64  `json:"sequence"`
					}
					if err := json.Unmarshal(resp.Body, &res); err != nil || resp.Status != 200 {
						t.Errorf("%d %s", resp.Status, resp.Body)
						return
					}
					mu.Lock()
					if prev, dup := seqs[res.Seq]; dup {
						t.Errorf("sequence %d handed out twice (%s, %s)", res.Seq, prev, res.ID)
					}
					seqs[res.Seq] = res.ID
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if len(seqs) != 3*perReplica {
		t.Fatalf("%d distinct sequences, want %d", len(seqs), 3*perReplica)
	}
	for i := int64(0); i < 3*perReplica; i++ {
		id, ok := seqs[i]
		if !ok {
			t.Errorf("gap at sequence %d", i)
			continue
		}
		if want, _ := toolrouter.ToolCallID("shared-plan", i); id != want {
			t.Errorf("sequence %d: id %s, want %s", i, id, want)
		}
	}

	// Idempotent replay across replicas.
	before := toolCalls.Load()
	body := map[string]any{"plan_id": "idem-plan", "tool_call": map[string]any{"name": "echo", "arguments": `{"n":1}`}}
	first := do(t, "POST", reps[0].URL()+"/route", body, "Idempotency-Key", "cross-replica-1")
	for _, rep := range reps[1:] {
		again := do(t, "POST", rep.URL()+"/route", body, "Idempotency-Key", "cross-replica-1")
		if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
			t.Errorf("replica %s did not replay: %s\n%s", rep.addr, again.Header, again.Body)
		}
	}
	if n := toolCalls.Load() - before; n != 1 {
		t.Errorf("the tool was called %d times for one key", n)
	}
	other := map[string]any{"plan_id": "idem-plan", "tool_call": map[string]any{"name": "echo", "arguments": `{"n":2}`}}
	if resp := do(t, "POST", reps[2].URL()+"/route", other, "Idempotency-Key", "cross-replica-1"); resp.Status != 422 {
		t.Errorf("same key, other body on another replica: %d", resp.Status)
	}
}

// TestConcurrentSameKeyRunsOnce: the same key sent to two replicas at once
// executes the tool once: the first replica holds the key in the tool
// while the second's request is in flight, and the second answers with
// the first's answer.
func TestConcurrentSameKeyRunsOnce(t *testing.T) {
	db := pgtest.Start(t)
	var toolCalls atomic.Int32
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toolCalls.Add(1)
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer tool.Close()
	reps := startReplicas(t, 2, fmt.Sprintf("tools:\n  - {name: slow, endpoint: %s}\n", tool.URL), db)
	body := map[string]any{"plan_id": "race", "tool_call": map[string]any{"name": "slow", "arguments": "{}"}}
	var wg sync.WaitGroup
	bodies := make([]string, 2)
	send := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := do(t, "POST", reps[i].URL()+"/route", body, "Idempotency-Key", "same-time")
			if resp.Status != 200 {
				t.Errorf("replica %d: %d %s", i, resp.Status, resp.Body)
			}
			bodies[i] = string(resp.Body)
		}()
	}
	send(0)
	<-arrived // replica 0 holds the key
	send(1)
	waitInFlight(t, reps[1], 1)
	close(release)
	wg.Wait()
	if toolCalls.Load() != 1 || bodies[0] != bodies[1] {
		t.Errorf("tool called %d times; answers\n%s\n%s", toolCalls.Load(), bodies[0], bodies[1])
	}
}

// waitInFlight waits until p serves n requests besides the /metrics one
// asking.
func waitInFlight(t *testing.T, p *proc, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() error {
		for _, line := range strings.Split(string(do(t, "GET", p.URL()+"/metrics", nil).Body), "\n") {
			if v, ok := strings.CutPrefix(line, "toolrouter_http_requests_in_flight "); ok {
				if f, _ := strconv.ParseFloat(v, 64); int(f)-1 >= n {
					return nil
				}
			}
		}
		return fmt.Errorf("%s: fewer than %d requests in flight", p.addr, n)
	})
}

// TestRunVisibleFromEveryReplica: a run started on one replica is read from
// another.
func TestRunVisibleFromEveryReplica(t *testing.T) {
	db := pgtest.Start(t)
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	reps := startReplicas(t, 2, runsRegistry(t, tools.addr, fake), db)
	fake.script(t, map[string]any{"tool_calls": []any{toolCall("test/echo", map[string]any{"msg": "x"})}}, map[string]any{"text": "done"})
	run := decodeRun(t, do(t, "POST", reps[0].URL()+"/runs", map[string]any{"prompt": "p", "context": map[string]any{"plan_id": "plan-shared-run"}}))
	if run.Status != "completed" {
		t.Fatalf("%+v", run)
	}
	got := decodeRun(t, do(t, "GET", reps[1].URL()+"/runs/"+run.RunID, nil))
	if got.RunID != run.RunID || got.Status != "completed" || len(got.ToolCalls) != 1 || got.Content != "done" {
		t.Errorf("from the other replica: %+v", got)
	}
	list := do(t, "GET", reps[1].URL()+"/runs?plan_id=plan-shared-run", nil)
	if !strings.Contains(string(list.Body), run.RunID) {
		t.Errorf("not listed on the other replica: %s", list.Body)
	}
}

// TestReplicaKilledMidBatch: SIGKILL one replica while it runs a batch; the
// others keep serving, and a run it owned is marked interrupted by them.
func TestReplicaKilledMidBatch(t *testing.T) {
	db := pgtest.Start(t)
	arrived := make(chan struct{}, 64)
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if strings.Contains(r.URL.Path, "hold") {
			arrived <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer tool.Close()
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	reg := runsRegistry(t, tools.addr, fake)
	reg = strings.Replace(reg, "tools:\n", fmt.Sprintf("tools:\n  - {name: hold, endpoint: %s/hold, timeout: 30s}\n  - {name: quick, endpoint: %s/quick}\n", tool.URL, tool.URL), 1)
	reps := startReplicas(t, 3, reg, db, "TOOLROUTER_RUN_HEARTBEAT=200ms")
	victim := reps[0]

	// The victim runs a batch and, in the background, a run stuck in a tool.
	fake.script(t, map[string]any{"tool_calls": []any{toolCall("hold", map[string]any{})}})
	runResp := do(t, "POST", victim.URL()+"/runs", map[string]any{"prompt": "hang", "context": map[string]any{"plan_id": "plan-victim"}}, "Prefer", "respond-async")
	runID := decodeRun(t, runResp).RunID
	batchDone := make(chan error, 1)
	go func() {
		raw, _ := json.Marshal(map[string]any{"plan_id": "kill-plan", "tool_calls": []any{
			map[string]any{"name": "hold", "arguments": "{}"}, map[string]any{"name": "quick", "arguments": "{}"}}})
		resp, err := http.Post(victim.URL()+"/route/batch", "application/json", strings.NewReader(string(raw)))
		if err == nil {
			resp.Body.Close()
		}
		batchDone <- err
	}()
	<-arrived
	<-arrived
	victim.cmd.Process.Signal(syscall.SIGKILL)
	if err := <-batchDone; err == nil {
		t.Errorf("the batch on the killed replica answered")
	}

	// The others keep serving, and continue the plan's sequence.
	for _, rep := range reps[1:] {
		resp := do(t, "POST", rep.URL()+"/route", map[string]any{"plan_id": "kill-plan", "tool_call": map[string]any{"name": "quick", "arguments": "{}"}})
		res := resp.JSON(t)
		if resp.Status != 200 || res["success"] != true {
			t.Errorf("survivor %s: %d %s", rep.addr, resp.Status, resp.Body)
		}
		if seq, _ := res["sequence"].(float64); seq < 2 {
			t.Errorf("survivor reused a sequence: %v", res["sequence"])
		}
	}
	// The run the victim owned stops heartbeating and is marked interrupted.
	poll.Until(t, 15*time.Second, func() error {
		if got := decodeRun(t, do(t, "GET", reps[1].URL()+"/runs/"+runID, nil)); got.Status != "interrupted" {
			return fmt.Errorf("run still %q after its replica died", got.Status)
		}
		return nil
	})
}

// TestReadinessFollowsTheDatabase: /readyz fails while PostgreSQL is
// unreachable and recovers, without a restart, when it is back.
func TestReadinessFollowsTheDatabase(t *testing.T) {
	db := pgtest.Start(t)
	// A TCP proxy in front of PostgreSQL that the test can cut.
	upstream := strings.TrimPrefix(db, "postgres://")
	upstream = upstream[strings.Index(upstream, "@")+1:]
	upstream = upstream[:strings.IndexAny(upstream, "/?")]
	px := newProxy(t, upstream)
	rt, _ := startRouter(t, "tools: []\n", "TOOLROUTER_STORE="+strings.Replace(db, upstream, px.addr, 1))
	ready := func() int { return do(t, "GET", rt.URL()+"/readyz", nil).Status }
	if s := ready(); s != 200 {
		t.Fatalf("readyz %d with the database up", s)
	}
	px.cut()
	waitStatus(t, ready, 503)
	// A route while the store is down is a 503 to retry, not a 500.
	resp := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "p", "tool_call": map[string]any{"name": "x", "arguments": "{}"}})
	if resp.Status != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(resp.Body), "retry") {
		t.Errorf("route with the store down: %d %s %s", resp.Status, resp.Header, resp.Body)
	}
	px.restore()
	waitStatus(t, ready, 200)
}

func waitStatus(t *testing.T, f func() int, want int) {
	t.Helper()
	poll.Until(t, 20*time.Second, func() error {
		if got := f(); got != want {
			return fmt.Errorf("status %d, want %d", got, want)
		}
		return nil
	})
}

// proxy forwards TCP connections to upstream; while cut, it drops them.
// Its listener stays open throughout, so the port stays its own.
type proxy struct {
	addr     string
	upstream string
	mu       sync.Mutex
	down     bool
	conns    []net.Conn
}

func newProxy(t *testing.T, upstream string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), upstream: upstream}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.upstream)
			p.mu.Lock()
			if err != nil || p.down {
				p.mu.Unlock()
				c.Close()
				if u != nil {
					u.Close()
				}
				continue
			}
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

// cut drops every connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// TestSQLiteRestartContinues: with the default store a restarted service
// continues every plan's sequence and still serves earlier runs.
func TestSQLiteRestartContinues(t *testing.T) {
	tools := startTools(t)
	fake := startFakeLLM(t, "openai")
	dbPath := filepath.Join(t.TempDir(), "toolrouter.db")
	reg := runsRegistry(t, tools.addr, fake)
	first, _ := startRouter(t, reg, "TOOLROUTER_STORE=sqlite://"+dbPath)
	for i := 0; i < 3; i++ {
		do(t, "POST", first.URL()+"/route", map[string]any{"plan_id": "durable", "tool_call": map[string]any{"name": "test/echo", "arguments": "{}"}})
	}
	fake.script(t, map[string]any{"text": "remembered"})
	run := decodeRun(t, do(t, "POST", first.URL()+"/runs", map[string]any{"prompt": "p"}))
	first.cmd.Process.Signal(syscall.SIGTERM)
	<-first.done

	second, _ := startRouter(t, reg, "TOOLROUTER_STORE=sqlite://"+dbPath)
	res := do(t, "POST", second.URL()+"/route", map[string]any{"plan_id": "durable", "tool_call": map[string]any{"name": "test/echo", "arguments": "{}"}}).JSON(t)
	if res["sequence"] != float64(3) {
		t.Errorf("sequence after restart %v, want 3", res["sequence"])
	}
	got := decodeRun(t, do(t, "GET", second.URL()+"/runs/"+run.RunID, nil))
	if got.Content != "remembered" || got.Status != "completed" {
		t.Errorf("run after restart %+v", got)
	}
}
