// Package storetest is the contract suite of store.Store: what every
// backend must do, including as several replicas on one database. Each
// backend's tests run it (Run); time in the suite is an injected clock
// (the stores' Now), never a sleep.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Backend opens the stores of one kind under test.
type Backend struct {
	// Database makes a fresh database and returns a function opening a
	// new Store on it each call (closed when the test ends) whose clock is
	// now: separate stores on one database are how the suite simulates
	// replicas. A backend whose stores cannot share a database (memory)
	// returns the one store each call.
	Database func(t *testing.T, now func() time.Time) (open func() store.Store)
	Replicas bool // open returns separate stores on one database
	Durable  bool // a reopened store sees what a closed one wrote
	// Dense: replicas on one database hand out one plan's sequences
	// without gaps (PostgreSQL, whose replicas must; SQLite processes
	// sharing a file each take their own blocks: distinct, not dense).
	Dense bool
}

// Run runs every test of the suite against b, each as a subtest with a
// fresh database and clock.
func Run(t *testing.T, b Backend) {
	for _, tc := range append([]struct {
		name string
		f    func(t *testing.T, b Backend, open func() store.Store, clk *Clock)
	}{
		{"SequencesAreDistinctAndGapFreeAcrossReplicas", sequencesAreDistinctAndGapFreeAcrossReplicas},
		{"ConcurrentOpenMigratesOnce", concurrentOpenMigratesOnce},
		{"ResultsRoundTripExactly", resultsRoundTripExactly},
		{"ClaimKeyStates", claimKeyStates},
		{"ClaimKeyConcurrentlyHasOneWinner", claimKeyConcurrentlyHasOneWinner},
		{"RunsSaveGetList", runsSaveGetList},
		{"InterruptStaleMarksOnlyStaleRunningRunsOnce", interruptStaleMarksOnlyStaleRunningRunsOnce},
		{"ReopenedStoreKeepsEverything", reopenedStoreKeepsEverything},
		{"InterruptedRunStaysInterrupted", interruptedRunStaysInterrupted},
		{"RenewKeyKeepsALongRequestsClaim", renewKeyKeepsALongRequestsClaim},
		{"NextSequencesAllocatesBlocks", nextSequencesAllocatesBlocks},
		{"AbandonedKeyIsNeverRunAgain", abandonedKeyIsNeverRunAgain},
		{"CleanCloseContinuesSequencesExactly", cleanCloseContinuesSequencesExactly},
		{"ManyResultsSavedAtOnceAreAllKept", manyResultsSavedAtOnceAreAllKept},
		{"ApprovalsDecidedOnceAcrossReplicas", approvalsDecidedOnceAcrossReplicas},
		{"ApprovalsExpireOnce", approvalsExpireOnce},
		{"ApprovalsByClientPagedAndPurged", approvalsByClientPagedAndPurged},
		{"ClientsAreIsolated", clientsAreIsolated},
		{"AuditAppendListPurge", auditAppendListPurge},
		{"AuditListedByTimeNotInsertion", auditListedByTimeNotInsertion},
		{"ResultAndItsAuditRecordAreWrittenTogether", resultAndItsAuditRecordAreWrittenTogether},
		{"TakeRateIsSharedAndBounded", takeRateIsSharedAndBounded},
		{"SpendReservationsHoldTheLimitAcrossReplicas", spendReservationsHoldTheLimitAcrossReplicas},
		{"SpendSettleDropAndUsage", spendSettleDropAndUsage},
		{"SpendSettledWithTheResult", spendSettledWithTheResult},
		{"MarksAreSharedAndExpire", marksAreSharedAndExpire},
		{"RefusedRequestRecordNamesItsTools", refusedRequestRecordNamesItsTools},
		{"SecretsAreSharedTakenOnceAndExpire", secretsAreSharedTakenOnceAndExpire},
	}, append(append(runAdminTests, pinTests...), taskTests...)...) {
		t.Run(tc.name, func(t *testing.T) {
			clk := NewClock(time.Now())
			tc.f(t, b, b.Database(t, clk.Now), clk)
		})
	}
}

// Clock is a settable clock for the stores' Now.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock standing at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// replicas opens n stores on one database (n times the same store for
// memory).
func replicas(open func() store.Store, n int) []store.Store {
	ss := make([]store.Store, n)
	for i := range ss {
		ss[i] = open()
	}
	return ss
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := toolrouter.ErrorCode(err); got != code {
		t.Fatalf("error %v has code %q, want %q", err, got, code)
	}
}

// roundTrip is what a store gives back for v: v through encoding/json, the
// reference semantics of store/memory.
func roundTrip[T any](t *testing.T, v *T) *T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func sequencesAreDistinctAndGapFreeAcrossReplicas(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 4)
	const workers, per = 4, 25 // per replica
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for _, s := range ss {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					n, err := s.NextSequence(ctx, "plan-a")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[n]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	total := int64(len(ss) * workers * per)
	for n, c := range seen {
		if c > 1 {
			t.Errorf("sequence %d handed out %d times", n, c)
		}
		if n < 0 || b.Dense && n >= total {
			t.Errorf("sequence %d outside [0, %d)", n, total)
		}
	}
	if int64(len(seen)) != total {
		t.Errorf("%d distinct sequences, want %d", len(seen), total)
	}
	if b.Dense {
		if n, err := ss[1].NextSequence(ctx, "plan-a"); err != nil || n != total {
			t.Errorf("next on another replica: %d, %v; want %d", n, err, total)
		}
		for i, s := range []store.Store{ss[0], ss[2], ss[0]} {
			if n, err := s.NextSequence(ctx, "plan-b"); err != nil || n != int64(i) {
				t.Errorf("plan-b #%d: %d, %v; want %d (a plan counts on its own, from 0)", i, n, err, i)
			}
		}
	}
	for i := 0; i < 3; i++ {
		if n, err := ss[0].NextSequence(ctx, "plan-c"); err != nil || n != int64(i) {
			t.Errorf("plan-c #%d: %d, %v; want %d (a plan counts on its own, from 0)", i, n, err, i)
		}
	}
	_, err := ss[0].NextSequence(ctx, "")
	wantCode(t, err, toolrouter.EINVALID)
	for _, s := range ss {
		if err := s.Ping(ctx); err != nil {
			t.Error(err)
		}
	}
}

func concurrentOpenMigratesOnce(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	if !b.Replicas {
		t.Skip("memory has nothing to migrate")
	}
	ctx := context.Background()
	ss := make([]store.Store, 5)
	var wg sync.WaitGroup
	for i := range ss {
		wg.Add(1)
		go func() { defer wg.Done(); ss[i] = open() }()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i, s := range ss {
		if s == nil {
			t.FailNow() // open reported why
		}
		n, err := s.NextSequence(ctx, "p")
		if err != nil || seen[n] || b.Dense && n != int64(i) {
			t.Errorf("replica %d: %d, %v", i, n, err)
		}
		seen[n] = true
	}
}

func sampleResult(id string) *toolrouter.Result {
	pcid := "call_abc"
	errText := `tool said: "no" <&> ünïcödé`
	cat := toolrouter.ErrorCategory("execution")
	passed := false
	return &toolrouter.Result{
		ToolCallID:     id,
		ProviderCallID: &pcid,
		PlanID:         "plan-001",
		Sequence:       41,
		ToolName:       "test/echo",
		ProviderFormat: toolrouter.Format("openai"),
		Arguments: map[string]any{"msg": "hi <b>&</b> ✓", "n": 1.5, "list": []any{"a", 2.0, nil, true},
			"nested": map[string]any{"deep": map[string]any{}}},
		Success: false,
		// Key order, spacing-free compact form and big/precise numbers must
		// survive: a jsonb column would reorder and reformat them.
		Output:           json.RawMessage(`{"z":1,"a":[1,2.50,"x"],"n":{"b":null},"big":12345678901234567890,"é":"\u00fc"}`),
		Error:            &errText,
		ErrorCategory:    &cat,
		IsValidation:     true,
		ValidationPassed: &passed,
		DurationMS:       1.75,
		ProviderMetadata: map[string]any{"request_id": "req-1"},
		ProviderResult:   map[string]any{"role": "tool", "tool_call_id": "call_abc", "content": "…"},
	}
}

func resultsRoundTripExactly(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	want := sampleResult("tc_0123456789abcdef01234567")
	if err := ss[0].SaveResult(ctx, want); err != nil {
		t.Fatal(err)
	}
	// Written behind: other replicas see it once committed.
	if err := ss[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := ss[1].GetResult(ctx, want.ToolCallID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, roundTrip(t, want)) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, roundTrip(t, want))
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("JSON differs:\n got %s\nwant %s", gotJSON, wantJSON)
	}

	// Saving again replaces.
	want.Success, want.Error, want.ErrorCategory = true, nil, nil
	want.Output = json.RawMessage(`[]`)
	if err := ss[1].SaveResult(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := ss[1].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := ss[0].GetResult(ctx, want.ToolCallID); err != nil || !reflect.DeepEqual(got, roundTrip(t, want)) {
		t.Errorf("after replace: %+v, %v", got, err)
	}

	_, err = ss[0].GetResult(ctx, "tc_unknown")
	wantCode(t, err, toolrouter.ENOTFOUND)
}

func wantClaim(t *testing.T, s store.Store, key, fp string, ttl time.Duration, state toolrouter.ClaimState, resp []byte) {
	t.Helper()
	c, err := s.ClaimKey(context.Background(), key, fp, ttl)
	if err != nil {
		t.Fatalf("claim %s/%s: %v", key, fp, err)
	}
	if c.State != state || !bytes.Equal(c.Response, resp) || (state == toolrouter.Answered) != (c.Response != nil) {
		t.Fatalf("claim %s/%s: state %d response %q, want state %d response %q", key, fp, c.State, c.Response, state, resp)
	}
}

func wantReused(t *testing.T, s store.Store, key, fp string) {
	t.Helper()
	_, err := s.ClaimKey(context.Background(), key, fp, time.Hour)
	if !errors.Is(err, toolrouter.ErrKeyReused) {
		t.Fatalf("claim %s/%s: %v, want ErrKeyReused", key, fp, err)
	}
	wantCode(t, err, toolrouter.EUNPROCESSABLE)
}

func claimKeyStates(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	a, c := ss[0], ss[1]
	const hour = time.Hour
	// Every byte value, a NUL and invalid UTF-8: the answer is opaque.
	answer := []byte("{\"tool_call_id\":\"tc_1\"}\x00\xff\xfe")
	for i := 0; i < 256; i++ {
		answer = append(answer, byte(i))
	}

	wantClaim(t, a, "k1", "fp1", hour, toolrouter.Claimed, nil)
	wantClaim(t, c, "k1", "fp1", hour, toolrouter.InProgress, nil)
	wantClaim(t, a, "k1", "fp1", hour, toolrouter.InProgress, nil) // even for the claimer
	wantReused(t, c, "k1", "fp2")
	if err := a.CompleteKey(ctx, "k1", answer, time.Hour); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, c, "k1", "fp1", hour, toolrouter.Answered, answer)
	wantClaim(t, a, "k1", "fp1", hour, toolrouter.Answered, answer)
	wantReused(t, c, "k1", "fp2")
	if err := c.ReleaseKey(ctx, "k1"); err != nil { // an answered key stays
		t.Fatal(err)
	}
	wantClaim(t, c, "k1", "fp1", hour, toolrouter.Answered, answer)

	// Release lets a retry (any body) claim it again.
	wantClaim(t, a, "k2", "fp1", hour, toolrouter.Claimed, nil)
	wantClaim(t, c, "k2", "fp1", hour, toolrouter.InProgress, nil)
	if err := a.ReleaseKey(ctx, "k2"); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, c, "k2", "fp-other", hour, toolrouter.Claimed, nil)
	wantReused(t, a, "k2", "fp1")

	// Expired answers are absent; an expired claim is abandoned
	// (abandonedKeyIsNeverRunAgain).
	const short = time.Minute
	wantClaim(t, a, "k3", "fp1", short, toolrouter.Claimed, nil)
	wantClaim(t, a, "k4", "fp1", short, toolrouter.Claimed, nil)
	if err := a.CompleteKey(ctx, "k4", []byte("old answer"), short); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, c, "k3", "fp1", short, toolrouter.InProgress, nil)
	wantClaim(t, c, "k4", "fp1", short, toolrouter.Answered, []byte("old answer"))
	clk.Advance(short - time.Second)
	wantClaim(t, c, "k3", "fp1", short, toolrouter.InProgress, nil)
	clk.Advance(2 * time.Second)
	wantClaim(t, c, "k3", "fp1", hour, toolrouter.Abandoned, nil)
	wantClaim(t, c, "k4", "fp1", hour, toolrouter.Claimed, nil)
	wantClaim(t, a, "k4", "fp1", hour, toolrouter.InProgress, nil)

	// Unknown keys: completing or releasing is a no-op.
	if err := a.CompleteKey(ctx, "nope", []byte("x"), time.Hour); err != nil {
		t.Error(err)
	}
	if err := a.ReleaseKey(ctx, "nope"); err != nil {
		t.Error(err)
	}
	// A short lease while in progress, the answer's TTL once complete.
	wantClaim(t, a, "k5", "fp1", short, toolrouter.Claimed, nil)
	if err := a.CompleteKey(ctx, "k5", []byte("kept"), hour); err != nil {
		t.Fatal(err)
	}
	clk.Advance(short + time.Second)
	wantClaim(t, c, "k5", "fp1", hour, toolrouter.Answered, []byte("kept"))
	if err := a.ReleaseKey(ctx, "nope"); err != nil {
		t.Error(err)
	}
	wantClaim(t, a, "nope", "fp", hour, toolrouter.Claimed, nil)
}

func claimKeyConcurrentlyHasOneWinner(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 4)
	const perReplica, keys = 6, 4
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("race-%d", k)
		var mu sync.Mutex
		states := map[toolrouter.ClaimState]int{}
		var winner store.Store
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, s := range ss {
			for g := 0; g < perReplica; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					c, err := s.ClaimKey(ctx, key, "fp", time.Hour)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					states[c.State]++
					if c.State == toolrouter.Claimed {
						winner = s
					}
					mu.Unlock()
				}()
			}
		}
		close(start)
		wg.Wait()
		n := len(ss) * perReplica
		if states[toolrouter.Claimed] != 1 || states[toolrouter.InProgress] != n-1 {
			t.Fatalf("%s: %d claimed, %d in progress, %d answered; want 1, %d, 0",
				key, states[toolrouter.Claimed], states[toolrouter.InProgress], states[toolrouter.Answered], n-1)
		}
		if err := winner.CompleteKey(ctx, key, []byte(key), time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			wantClaim(t, s, key, "fp", time.Hour, toolrouter.Answered, []byte(key))
		}
	}
}

// sameInstant compares instants to the microsecond: PostgreSQL keeps
// timestamps in microseconds.
func sameInstant(a, b time.Time) bool {
	d := a.Sub(b)
	return d < time.Microsecond && d > -time.Microsecond
}

func sampleRun(id, plan string, created time.Time) *toolrouter.Run {
	reason := toolrouter.ReasonMaxIterations
	out := "done"
	cat := toolrouter.ErrorCategory("timeout")
	finished := created.Add(1500 * time.Millisecond)
	return &toolrouter.Run{
		RunID: id, Status: toolrouter.RunTerminated, TerminatedReason: &reason,
		Content: "the answer <&> ✓", Iterations: 2, TerminatedByLimit: true,
		Provider: "local", Model: "qwen2.5:7b",
		Usage: &toolrouter.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15},
		ToolCalls: []toolrouter.ToolCallRecord{{
			ToolCallID: "tc_1", ProviderCallID: "call_1", ToolName: "test/echo",
			Inputs: map[string]any{"msg": "hi"}, Output: map[string]any{"msg": "hi"},
			Success: true, DurationMS: 1.5, Iteration: 1,
		}, {
			ToolCallID: "tc_2", ToolName: "test/slow", Inputs: map[string]any{},
			Output: nil, Error: &out, ErrorCategory: &cat, Iteration: 2,
		}},
		Context: toolrouter.ActorContext{PlanID: plan, Phase: "build", SandboxRoot: "/sandbox",
			ResourceBindings: map[string]any{"db": "x"}, Metadata: map[string]any{"k": []any{1.0}}},
		Prompt:      "do it",
		CreatedAt:   created,
		FinishedAt:  &finished,
		Owner:       "replica-a",
		HeartbeatAt: created.Add(time.Second),
	}
}

// wantRun checks got is want as stored: its JSON fields through
// encoding/json, Owner and HeartbeatAt as given.
func wantRun(t *testing.T, got, want *toolrouter.Run) {
	t.Helper()
	if got.Owner != want.Owner || got.Client != want.Client || !sameInstant(got.HeartbeatAt, want.HeartbeatAt) {
		t.Errorf("run %s: owner %q client %q heartbeat %v, want %q %q %v", want.RunID, got.Owner, got.Client, got.HeartbeatAt, want.Owner, want.Client, want.HeartbeatAt)
	}
	g := *got
	g.Owner, g.Client, g.HeartbeatAt = "", "", time.Time{}
	w := roundTrip(t, want)
	if !reflect.DeepEqual(&g, w) {
		t.Errorf("run %s:\n got %+v\nwant %+v", want.RunID, &g, w)
	}
}

func runsSaveGetList(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	base := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

	run := sampleRun("run-1", "plan-x", base)
	if err := ss[0].SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	got, err := ss[1].GetRun(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	wantRun(t, got, run)

	// Saving again replaces (a heartbeat, then the end of the run).
	run.Status, run.TerminatedReason, run.Content = toolrouter.RunCompleted, nil, "final"
	run.Owner, run.HeartbeatAt = "replica-b", base.Add(time.Minute)
	if err := ss[1].SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	got, err = ss[0].GetRun(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	wantRun(t, got, run)

	_, err = ss[0].GetRun(ctx, "run-unknown")
	wantCode(t, err, toolrouter.ENOTFOUND)

	// Five more runs of plan-x, saved out of order, one of plan-y.
	for _, i := range rand.Perm(5) {
		r := sampleRun(fmt.Sprintf("run-x%d", i), "plan-x", base.Add(time.Duration(i+1)*time.Hour))
		if err := ss[i%2].SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss[0].SaveRun(ctx, sampleRun("run-y", "plan-y", base.Add(10*time.Hour))); err != nil {
		t.Fatal(err)
	}
	ids := func(rs []*toolrouter.Run) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.RunID)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		plan  string
		limit int
		want  string
	}{
		{"plan-x", 0, "run-x4,run-x3,run-x2,run-x1,run-x0,run-1"},
		{"plan-x", -1, "run-x4,run-x3,run-x2,run-x1,run-x0,run-1"},
		{"plan-x", 2, "run-x4,run-x3"},
		{"plan-x", 6, "run-x4,run-x3,run-x2,run-x1,run-x0,run-1"},
		{"plan-x", 100, "run-x4,run-x3,run-x2,run-x1,run-x0,run-1"},
		{"plan-y", 10, "run-y"},
		{"plan-none", 10, ""},
		{"", 3, "run-y,run-x4,run-x3"}, // every plan's: the console's recent runs
		{"", 0, "run-y,run-x4,run-x3,run-x2,run-x1,run-x0,run-1"},
	} {
		rs, err := ss[1].ListRuns(ctx, tc.plan, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(rs); got != tc.want {
			t.Errorf("ListRuns(%s, %d) = %s, want %s", tc.plan, tc.limit, got, tc.want)
		}
		if rs == nil {
			t.Errorf("ListRuns(%s, %d) = nil, want an empty list (encodes as [])", tc.plan, tc.limit)
		}
	}
	rs, _ := ss[0].ListRuns(ctx, "plan-x", 0)
	wantRun(t, rs[len(rs)-1], run)
}

func interruptStaleMarksOnlyStaleRunningRunsOnce(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 3)
	before := clk.Now().UTC().Truncate(time.Millisecond)
	created := before.Add(-time.Hour)
	mk := func(id, plan string, status toolrouter.RunStatus, heartbeat time.Time) *toolrouter.Run {
		r := sampleRun(id, plan, created)
		r.Status, r.HeartbeatAt, r.FinishedAt, r.Error = status, heartbeat, nil, nil
		if err := ss[0].SaveRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	stale := []*toolrouter.Run{
		mk("stale-1", "p1", toolrouter.RunRunning, before.Add(-time.Minute)),
		mk("stale-2", "p1", toolrouter.RunRunning, before.Add(-time.Millisecond)),
		mk("stale-3", "p2", toolrouter.RunRunning, before.Add(-24*time.Hour)),
	}
	untouched := []*toolrouter.Run{
		mk("fresh", "p1", toolrouter.RunRunning, before.Add(time.Second)),
		mk("boundary", "p1", toolrouter.RunRunning, before), // not older than before
		mk("done", "p1", toolrouter.RunCompleted, before.Add(-time.Hour)),
		mk("failed", "p2", toolrouter.RunFailed, before.Add(-time.Hour)),
	}

	// Sweepers on every replica at once: each stale run is marked once.
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for _, s := range ss {
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := s.InterruptStale(ctx, before)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if total != len(stale) {
		t.Errorf("interrupted %d runs in all, want %d", total, len(stale))
	}
	if n, err := ss[1].InterruptStale(ctx, before); err != nil || n != 0 {
		t.Errorf("second sweep: %d, %v; want 0", n, err)
	}

	for _, r := range stale {
		got, err := ss[2].GetRun(ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != toolrouter.RunInterrupted || got.Error == nil || *got.Error == "" ||
			got.FinishedAt == nil || got.FinishedAt.Before(before) {
			t.Errorf("%s: status %s error %v finished %v; want interrupted with an error and a finish time",
				r.RunID, got.Status, got.Error, got.FinishedAt)
		}
		// Everything else is kept.
		want := *r
		want.Interrupt(*got.FinishedAt)
		want.Error = got.Error
		wantRun(t, got, &want)
	}
	for _, r := range untouched {
		got, err := ss[2].GetRun(ctx, r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		wantRun(t, got, r)
	}
	// Lists read the same state.
	rs, err := ss[0].ListRuns(ctx, "p2", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.RunID == "stale-3" && r.Status != toolrouter.RunInterrupted {
			t.Errorf("ListRuns shows stale-3 as %s", r.Status)
		}
	}
}

func reopenedStoreKeepsEverything(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	if !b.Durable {
		t.Skip("memory is not durable")
	}
	ctx := context.Background()
	s := open()
	for i := 0; i < 3; i++ {
		if _, err := s.NextSequence(ctx, "p"); err != nil {
			t.Fatal(err)
		}
	}
	res := sampleResult("tc_restart")
	run := sampleRun("run-restart", "p", time.Now())
	if err := s.SaveResult(ctx, res); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, s, "key", "fp", time.Hour, toolrouter.Claimed, nil)
	if err := s.CompleteKey(ctx, "key", []byte("answer"), time.Hour); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, s, "key2", "fp", time.Hour, toolrouter.Claimed, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open() // migrations already applied: a no-op
	if n, err := s.NextSequence(ctx, "p"); err != nil || n != 3 {
		t.Errorf("after restart: %d, %v; want 3", n, err)
	}
	if got, err := s.GetResult(ctx, res.ToolCallID); err != nil || !reflect.DeepEqual(got, roundTrip(t, res)) {
		t.Errorf("result after restart: %+v, %v", got, err)
	}
	if got, err := s.GetRun(ctx, run.RunID); err != nil {
		t.Error(err)
	} else {
		wantRun(t, got, run)
	}
	wantClaim(t, s, "key", "fp", time.Hour, toolrouter.Answered, []byte("answer"))
	wantClaim(t, s, "key2", "fp", time.Hour, toolrouter.InProgress, nil)
}

// interruptedRunStaysInterrupted: a heartbeat of the replica that lost
// a run does not bring it back to running; its final status still lands.
func interruptedRunStaysInterrupted(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	created := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	r := sampleRun("slow-run", "p", created)
	r.Status, r.HeartbeatAt, r.FinishedAt, r.Error = toolrouter.RunRunning, created, nil, nil
	if err := ss[0].SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if n, err := ss[1].InterruptStale(ctx, time.Now().UTC()); err != nil || n != 1 {
		t.Fatalf("interrupt: %d %v", n, err)
	}
	r.HeartbeatAt = time.Now().UTC() // the late heartbeat
	if err := ss[0].SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, _ := ss[1].GetRun(ctx, "slow-run"); got.Status != toolrouter.RunInterrupted {
		t.Errorf("after a late heartbeat: %s, want interrupted", got.Status)
	}
	r.Status = toolrouter.RunCompleted
	if err := ss[0].SaveRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, _ := ss[1].GetRun(ctx, "slow-run"); got.Status != toolrouter.RunCompleted {
		t.Errorf("final status: %s, want completed", got.Status)
	}
}

// renewKeyKeepsALongRequestsClaim: renewing the lease of a key in
// progress keeps other claimers out past the first lease.
func renewKeyKeepsALongRequestsClaim(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	const short = time.Minute
	wantClaim(t, ss[0], "long", "fp", short, toolrouter.Claimed, nil)
	clk.Advance(short / 2)
	if err := ss[0].RenewKey(ctx, "long", 2*short); err != nil {
		t.Fatal(err)
	}
	clk.Advance(short)
	wantClaim(t, ss[1], "long", "fp", short, toolrouter.InProgress, nil)
	// Renewing an answered key changes nothing.
	if err := ss[0].CompleteKey(ctx, "long", []byte("done"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := ss[0].RenewKey(ctx, "long", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	wantClaim(t, ss[1], "long", "fp", short, toolrouter.Answered, []byte("done"))
}

// nextSequencesAllocatesBlocks: blocks and single sequences taken at
// once from several instances on one database interleave without gaps or
// overlaps.
func nextSequencesAllocatesBlocks(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 3)
	var mu sync.Mutex
	seen := map[int64]bool{}
	total := int64(0)
	var wg sync.WaitGroup
	for w, s := range ss {
		for k := 0; k < 4; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := int64(1 + (w+k)%5)
				first, err := s.NextSequences(ctx, "blocks", n)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				total += n
				for i := first; i < first+n; i++ {
					if seen[i] {
						t.Errorf("sequence %d handed out twice", i)
					}
					seen[i] = true
				}
			}()
		}
	}
	wg.Wait()
	if !b.Dense {
		if int64(len(seen)) != total {
			t.Errorf("%d distinct sequences, want %d", len(seen), total)
		}
		return
	}
	for i := int64(0); i < total; i++ {
		if !seen[i] {
			t.Errorf("gap at %d of %d", i, total)
		}
	}
	if next, _ := ss[0].NextSequence(ctx, "blocks"); next != total {
		t.Errorf("after the blocks: %d, want %d", next, total)
	}
	if _, err := ss[0].NextSequences(ctx, "blocks", 0); err == nil {
		t.Error("a block of 0 accepted")
	}
}

// abandonedKeyIsNeverRunAgain: a claim whose lease lapsed without an
// answer (its request's replica died, or its answer could not be stored)
// is reported as Abandoned, not handed to a retry to run again, until it
// is answered or its grace (toolrouter.AbandonedGrace) is over.
func abandonedKeyIsNeverRunAgain(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	const lease = 10 * time.Second
	wantClaim(t, ss[0], "dead", "fp", lease, toolrouter.Claimed, nil)
	clk.Advance(lease / 2)
	wantClaim(t, ss[1], "dead", "fp", lease, toolrouter.InProgress, nil)
	clk.Advance(lease)
	wantClaim(t, ss[1], "dead", "fp", lease, toolrouter.Abandoned, nil)
	wantReused(t, ss[1], "dead", "other")
	if p, ok := ss[1].(interface {
		PurgeExpiredKeys(context.Context) (int, error)
	}); ok {
		if _, err := p.PurgeExpiredKeys(ctx); err != nil {
			t.Fatal(err)
		}
		wantClaim(t, ss[1], "dead", "fp", lease, toolrouter.Abandoned, nil) // not purged
	}
	// What a retry is told is stored as the key's answer.
	if err := ss[1].CompleteKey(ctx, "dead", []byte("outcome unknown"), time.Hour); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, ss[0], "dead", "fp", lease, toolrouter.Answered, []byte("outcome unknown"))

	wantClaim(t, ss[0], "forgotten", "fp", lease, toolrouter.Claimed, nil)
	clk.Advance(lease + toolrouter.AbandonedGrace + time.Second)
	wantClaim(t, ss[1], "forgotten", "fp", lease, toolrouter.Claimed, nil)
}

// cleanCloseContinuesSequencesExactly: however a store hands out
// sequences (SQLite reserves them in blocks), a store closed cleanly
// leaves every plan where it stopped.
func cleanCloseContinuesSequencesExactly(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	if !b.Durable {
		t.Skip("memory is not durable")
	}
	ctx := context.Background()
	s := open()
	for i := 0; i < 5; i++ {
		if _, err := s.NextSequence(ctx, "stop-here"); err != nil {
			t.Fatal(err)
		}
	}
	if first, err := s.NextSequences(ctx, "batch-plan", 3); err != nil || first != 0 {
		t.Fatalf("batch: %d %v", first, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	if n, err := s.NextSequence(ctx, "stop-here"); err != nil || n != 5 {
		t.Errorf("after a clean close: %d, %v; want 5", n, err)
	}
	if n, err := s.NextSequence(ctx, "batch-plan"); err != nil || n != 3 {
		t.Errorf("after a clean close: %d, %v; want 3", n, err)
	}
}

// manyResultsSavedAtOnceAreAllKept: concurrent saves (grouped into few
// commits where the store writes behind) are each readable afterwards.
func manyResultsSavedAtOnceAreAllKept(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s := open()
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.SaveResult(ctx, sampleResult(fmt.Sprintf("tc_many_%d", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("tc_many_%d", i)
		if got, err := s.GetResult(ctx, id); err != nil || got.ToolCallID != id {
			t.Fatalf("%s: %+v %v", id, got, err)
		}
	}
}
