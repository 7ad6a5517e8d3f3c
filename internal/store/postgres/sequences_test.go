package postgres

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

// Concurrent callers on two stores sharing one database (two replicas),
// single calls and blocks over several plans, so that groups hold several
// callers of one plan and several plans: every plan's numbers are handed
// out once each, without gaps, and a plan continues where they stopped on
// either replica.
func TestSequencesAcrossTwoReplicas(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	var replicas [2]*Store
	for i := range replicas {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		replicas[i] = s
	}
	const workers, per = 16, 40 // per replica
	plans := []string{"p0", "p1", "p2", "client\x1fp0", "é-plan"}
	var mu sync.Mutex
	seen := map[string]map[int64]int{}
	total := map[string]int64{}
	var wg sync.WaitGroup
	for r, s := range replicas {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					plan := plans[(r+w+i)%len(plans)]
					n := int64(1 + (w*i)%3)
					first, err := s.NextSequences(ctx, plan, n)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if seen[plan] == nil {
						seen[plan] = map[int64]int{}
					}
					for k := first; k < first+n; k++ {
						seen[plan][k]++
					}
					total[plan] += n
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for _, plan := range plans {
		for k, c := range seen[plan] {
			if c > 1 {
				t.Errorf("plan %q: %d handed out %d times", plan, k, c)
			}
		}
		for k := int64(0); k < total[plan]; k++ {
			if seen[plan][k] == 0 {
				t.Errorf("plan %q: gap at %d of %d", plan, k, total[plan])
			}
		}
		for i, s := range []*Store{replicas[1], replicas[0]} {
			if n, err := s.NextSequence(ctx, plan); err != nil || n != total[plan]+int64(i) {
				t.Errorf("plan %q after the burst, replica %d: %d, %v; want %d", plan, 1-i, n, err, total[plan]+int64(i))
			}
		}
	}
}

// One group of calls on several plans, in one statement: each call gets
// its own contiguous range, in queue order within a plan, and a plan's
// first group starts it at 0.
func TestAllocateGroupRanges(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.NextSequences(ctx, "b", 10); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	g := &seqGroup{done: make(chan struct{}), ws: []seqWaiter{
		{ctx: ctx, plan: "a", n: 1}, {ctx: ctx, plan: "b", n: 3}, {ctx: ctx, plan: "a", n: 2},
		{ctx: cancelled, plan: "c", n: 5}, {ctx: ctx, plan: "c", n: 1}, {ctx: ctx, plan: "b", n: 1},
	}}
	p.allocateGroup(g)
	want := []int64{0, 10, 1, -1, 0, 13}
	for i, w := range g.ws {
		if i == 3 {
			if w.err == nil {
				t.Errorf("the caller gone before its group ran got %d", w.first)
			}
			continue
		}
		if w.err != nil || w.first != want[i] {
			t.Errorf("waiter %d (%s, %d): %d, %v; want %d", i, w.plan, w.n, w.first, w.err, want[i])
		}
	}
	for plan, next := range map[string]int64{"a": 3, "b": 14, "c": 1} {
		if n, err := p.NextSequence(ctx, plan); err != nil || n != next {
			t.Errorf("plan %s next: %d, %v; want %d", plan, n, err, next)
		}
	}
}

// A plan id the server refuses fails its own calls only, even when it is
// in a group with others (they are then allocated plan by plan); through
// NextSequence it is never grouped at all.
func TestRefusedPlanFailsOnlyItsCalls(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	bad := "nul\x00plan"
	g := &seqGroup{done: make(chan struct{}), ws: []seqWaiter{
		{ctx: ctx, plan: "a", n: 2}, {ctx: ctx, plan: bad, n: 1}, {ctx: ctx, plan: "b", n: 1}, {ctx: ctx, plan: "a", n: 1},
	}}
	p.allocateGroup(g)
	for i, want := range []int64{0, -1, 0, 2} {
		w := g.ws[i]
		if want < 0 {
			if w.err == nil {
				t.Errorf("plan %q allocated %d", w.plan, w.first)
			}
			continue
		}
		if w.err != nil || w.first != want {
			t.Errorf("waiter %d (%s): %d, %v; want %d", i, w.plan, w.first, w.err, want)
		}
	}
	for _, plan := range []string{bad, "bad utf-8 \xff"} {
		if groupable(plan) {
			t.Errorf("%q would be grouped", plan)
		}
		if _, err := p.NextSequence(ctx, plan); err == nil {
			t.Errorf("%q: allocated", plan)
		}
	}
	if groupable(strings.Repeat("x", pgGroupablePlanID+1)) || !groupable("client\x1fplan é") {
		t.Error("groupable draws the line elsewhere")
	}
	if n, err := p.NextSequence(ctx, "a"); err != nil || n != 3 {
		t.Errorf("a: %d, %v; want 3", n, err)
	}
}

// After Close, calls fail instead of waiting for a group that never runs.
func TestNextSequenceAfterClose(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.NextSequence(ctx, "p"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("after Close: %v", err)
	}
}

// The calls made while a statement runs share the next one: with the
// plan's row locked by another transaction, the first call's statement
// waits, the next calls all join one group, and once the lock is released
// two statements have served them all, each call its own number.
func TestCallsWaitingTogetherShareOneStatement(t *testing.T) {
	ctx := context.Background()
	p, err := Open(ctx, pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n, err := p.NextSequence(ctx, "busy"); err != nil || n != 0 {
		t.Fatalf("first: %d, %v", n, err)
	}
	var groups atomic.Int32
	p.seq.close()
	p.seq = newSequencer(func(g *seqGroup) {
		groups.Add(1)
		p.allocateGroup(g)
	})
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT next FROM plan_sequences WHERE plan_id = 'busy' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	const n = 20
	got := make(chan int64, n)
	call := func() {
		s, err := p.NextSequence(ctx, "busy")
		if err != nil {
			t.Error(err)
		}
		got <- s
	}
	go call()
	// Wait (without sleeping) until the loop took the first group, then
	// until the others all joined the next one.
	waitFor := func(cond func() bool) {
		for !cond() {
			runtime.Gosched()
		}
	}
	pending := func() int {
		p.seq.mu.Lock()
		defer p.seq.mu.Unlock()
		if p.seq.pending == nil {
			return 0
		}
		return len(p.seq.pending.ws)
	}
	waitFor(func() bool { return groups.Load() == 1 && pending() == 0 })
	for range n - 1 {
		go call()
	}
	waitFor(func() bool { return pending() == n-1 })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for range n {
		s := <-got
		if s < 1 || s > n || seen[s] {
			t.Errorf("sequence %d: out of [1, %d] or handed out twice", s, n)
		}
		seen[s] = true
	}
	if g := groups.Load(); g != 2 {
		t.Errorf("%d calls took %d statements, want 2", n, g)
	}
}
