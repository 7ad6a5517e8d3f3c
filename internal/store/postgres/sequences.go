package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Sequence allocation (docs/operations.md "Storage and durability"): the NextSequence
// and NextSequences calls made at once in one process are combined into
// one statement, one round trip and one commit, that advances every plan
// involved by the sum of its callers' counts and hands each caller its own
// contiguous range of it. A caller returns only once that statement is
// committed, so a crash never hands a number out twice; callers of one
// plan in one group get their ranges in an arbitrary order, never
// overlapping. Replicas each group their own callers: the row lock of a
// plan orders their statements, so its numbers still increase in the order
// they are handed out, across replicas.
//
// Under load, the statement of one group runs while the next group fills:
// a plan's row is locked from a statement until its commit (its WAL
// flush), so one statement per route on a busy plan made routes wait for
// each other's flushes, one at a time.

const (
	// nextSequenceSQL allocates total numbers of one plan.
	nextSequenceSQL = `INSERT INTO plan_sequences (plan_id, next) VALUES ($1, $2)
		ON CONFLICT (plan_id) DO UPDATE SET next = plan_sequences.next + excluded.next
		RETURNING next`
	// nextSequencesSQL allocates for several plans at once (plan ids
	// distinct, as ON CONFLICT DO UPDATE requires). The rows are taken in
	// one order (byte order, the same in every replica), so two replicas'
	// statements lock shared plans in the same order and never deadlock.
	nextSequencesSQL = `INSERT INTO plan_sequences (plan_id, next)
		SELECT plan_id, n FROM unnest($1::text[], $2::bigint[]) AS v(plan_id, n) ORDER BY plan_id COLLATE "C"
		ON CONFLICT (plan_id) DO UPDATE SET next = plan_sequences.next + excluded.next
		RETURNING plan_id, next`
	// pgGroupablePlanID bounds the plan ids allocated in a group: a longer
	// one goes alone, so that the server refusing it (an index entry is at
	// most about 2.7 kB) fails its own call only.
	pgGroupablePlanID = 1024
)

// NextSequence implements store.Store: see NextSequences.
func (p *Store) NextSequence(ctx context.Context, planID string) (int64, error) {
	return p.NextSequences(ctx, planID, 1)
}

// NextSequences implements store.Store: the call joins the group of
// allocations of this store (see above) and returns once its statement is
// committed.
func (p *Store) NextSequences(ctx context.Context, planID string, n int64) (int64, error) {
	if err := toolrouter.CheckSequences(planID, n); err != nil {
		return 0, err
	}
	if !groupable(planID) {
		// A plan id PostgreSQL may refuse (NUL, not UTF-8, too long) would
		// fail every call of its group: it goes alone, as it always did.
		return p.allocate(ctx, planID, n)
	}
	g, i, err := p.seq.join(ctx, planID, n)
	if err != nil {
		return 0, fmt.Errorf("postgres next sequence: %w", err)
	}
	select {
	case <-g.done:
	case <-ctx.Done():
		// The group may still commit this caller's numbers: they are
		// skipped, never handed out again.
		return 0, ctx.Err()
	}
	w := &g.ws[i]
	if w.err != nil {
		return 0, w.err
	}
	return w.first, nil
}

func groupable(planID string) bool {
	return len(planID) <= pgGroupablePlanID && strings.IndexByte(planID, 0) < 0 && utf8.ValidString(planID)
}

// allocate allocates n numbers of one plan in one statement of its own.
func (p *Store) allocate(ctx context.Context, planID string, n int64) (int64, error) {
	var next int64
	if err := p.pool.QueryRow(ctx, nextSequenceSQL, planID, n).Scan(&next); err != nil {
		return 0, fmt.Errorf("postgres next sequence: %w", err)
	}
	return next - n, nil
}

// seqWaiter is one NextSequences call of a group.
type seqWaiter struct {
	ctx  context.Context
	plan string
	n    int64
	// first is the first number of the caller's range once the group's
	// done is closed, unless err is set.
	first int64
	err   error
}

// seqGroup is the calls allocated by one statement.
type seqGroup struct {
	ws   []seqWaiter
	done chan struct{} // closed once every waiter's first or err is set
}

// sequencer collects the calls of the next group while the statement of
// the previous one runs (on its own goroutine).
type sequencer struct {
	run     func(g *seqGroup)
	mu      sync.Mutex
	pending *seqGroup     // the group being filled, nil if none
	closed  bool          // no group is taken any more
	wake    chan struct{} // holds a token while pending is waiting for the loop
	stopped chan struct{}
}

var errSequencerClosed = errors.New("store closed")

func newSequencer(run func(g *seqGroup)) *sequencer {
	q := &sequencer{run: run, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go q.loop()
	return q
}

// join adds a call to the pending group and returns the group and the
// call's index in it.
func (q *sequencer) join(ctx context.Context, plan string, n int64) (*seqGroup, int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, 0, errSequencerClosed
	}
	g := q.pending
	if g == nil {
		g = &seqGroup{done: make(chan struct{})}
		q.pending = g
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	g.ws = append(g.ws, seqWaiter{ctx: ctx, plan: plan, n: n})
	return g, len(g.ws) - 1, nil
}

func (q *sequencer) loop() {
	defer close(q.stopped)
	for range q.wake {
		q.mu.Lock()
		g := q.pending
		q.pending = nil
		q.mu.Unlock()
		if g != nil {
			q.run(g)
			close(g.done)
		}
	}
}

// close allocates for the calls already waiting, then stops: later calls
// fail.
func (q *sequencer) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.wake) // after the token of a pending group, if any
	}
	q.mu.Unlock()
	<-q.stopped
}

// allocateGroup runs the statement of a group and sets each waiter's
// range (or error).
func (p *Store) allocateGroup(g *seqGroup) {
	ctx, cancel := context.WithTimeout(context.Background(), pgCommitTimeout)
	defer cancel()
	ws := g.ws
	// Callers gone already get nothing; each other waiter's first holds,
	// until the statement returns, its offset in its plan's range.
	var plans []string       // distinct, in order of first appearance
	var totals []int64       // per plan
	var index map[string]int // plan to its j, once there are several
	for i := range ws {
		w := &ws[i]
		if err := w.ctx.Err(); err != nil {
			w.err = err
			continue
		}
		w.ctx = nil
		j := -1
		if len(plans) > 0 && plans[0] == w.plan {
			j = 0
		} else if k, ok := index[w.plan]; ok {
			j = k
		}
		if j < 0 {
			if len(plans) == 1 {
				index = map[string]int{plans[0]: 0}
			}
			j = len(plans)
			plans, totals = append(plans, w.plan), append(totals, 0)
			if index != nil {
				index[w.plan] = j
			}
		}
		w.first = totals[j]
		totals[j] += w.n
	}
	firsts, err := p.allocatePlans(ctx, plans, totals, index)
	var pgErr *pgconn.PgError
	if err != nil && len(plans) > 1 && errors.As(err, &pgErr) {
		// The server refused the statement (nothing was allocated): one
		// plan's failure must not fail the others' calls, so each plan
		// goes alone.
		for j := range plans {
			if firsts[j], err = p.allocate(ctx, plans[j], totals[j]); err != nil {
				setPlanError(ws, plans[j], err)
			}
		}
		err = nil
	}
	for i := range ws {
		w := &ws[i]
		switch {
		case w.err != nil:
		case err != nil:
			w.err = err
		default:
			j := 0
			if index != nil {
				j = index[w.plan]
			}
			w.first += firsts[j]
		}
	}
}

// setPlanError fails the waiters of plan not failed yet.
func setPlanError(ws []seqWaiter, plan string, err error) {
	for i := range ws {
		if ws[i].plan == plan && ws[i].err == nil {
			ws[i].err = err
		}
	}
}

// allocatePlans allocates totals[j] numbers of each plans[j] in one
// statement and returns the first of each; index maps each plan to j when
// there are several.
func (p *Store) allocatePlans(ctx context.Context, plans []string, totals []int64, index map[string]int) ([]int64, error) {
	firsts := make([]int64, len(plans))
	switch len(plans) {
	case 0:
		return firsts, nil
	case 1:
		first, err := p.allocate(ctx, plans[0], totals[0])
		firsts[0] = first
		return firsts, err
	}
	rows, _ := p.pool.Query(ctx, nextSequencesSQL, plans, totals)
	seen := 0
	for rows.Next() {
		var plan string
		var next int64
		if err := rows.Scan(&plan, &next); err != nil {
			rows.Close()
			return firsts, fmt.Errorf("postgres next sequence: %w", err)
		}
		j, ok := index[plan]
		if !ok {
			rows.Close()
			return firsts, fmt.Errorf("postgres next sequence: unexpected plan %q", plan)
		}
		firsts[j] = next - totals[j]
		seen++
	}
	if err := rows.Err(); err != nil {
		return firsts, fmt.Errorf("postgres next sequence: %w", err)
	}
	if seen != len(plans) {
		return firsts, fmt.Errorf("postgres next sequence: %d of %d plans allocated", seen, len(plans))
	}
	return firsts, nil
}
