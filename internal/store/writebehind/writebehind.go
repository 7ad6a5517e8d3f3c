// Package writebehind is the group commit of the SQL stores (docs/operations.md
// "Storage and durability"): one writer goroutine per store takes every
// write queued since its last commit and commits them together, in one
// transaction, so many routes' results (and any other record that can be
// written behind, such as audit records) cost one commit, not one each.
// With Linger, a commit nobody waits for first waits a little for more
// writes; a write that is waited for (AddWait, Flush) is never delayed.
//
// The queue is bounded: when it is full, Add waits (backpressure), so a
// store slower than the traffic slows the traffic instead of growing
// memory. Close commits what is queued before it returns.
package writebehind

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Write is one statement queued for the group commit.
type Write struct {
	SQL  string
	Args []any
	// Row marks SQL as an INSERT of one row (one VALUES tuple): the group
	// commit may insert the rows of every write of that SQL in one
	// statement (see Group).
	Row bool
	// Key, on a Row, names the row it writes: of the rows of one SQL with
	// the same Key in a group, only the last is inserted, as an upsert
	// applied in order would leave it (one multi-row upsert must not
	// update a row twice: PostgreSQL refuses it).
	Key string
	// Durable marks a write somebody relies on surviving an OS crash once
	// its commit returns (an Idempotency-Key's answer): a store whose
	// commits are not all durable makes the commit holding it durable.
	Durable bool
	// Kind names what the write stores ("result", "audit"), for the count
	// of writes lost when a commit nobody waits for fails (SetOnError).
	Kind string
}

// Rows are the rows of one Row statement in a group, in queue order.
type Rows struct {
	SQL  string
	Args [][]any
}

// Group splits the writes of one commit into the rows of each Row
// statement (statements in order of first appearance, rows in queue
// order, a Key's earlier rows dropped) and the other writes, in order.
// Inserting the rows before the other writes is safe in one transaction
// as long as no other write of the group reads what they insert: the
// other writes are updates of rows written before the group (an
// Idempotency-Key's answer).
func Group(ws []Write) (rows []Rows, others []Write) {
	var last map[[2]string]int // SQL and Key: index in ws of its last row
	for i, w := range ws {
		if w.Row && w.Key != "" {
			if last == nil {
				last = make(map[[2]string]int)
			}
			last[[2]string{w.SQL, w.Key}] = i
		}
	}
	for i, w := range ws {
		if !w.Row {
			others = append(others, w)
			continue
		}
		if w.Key != "" && last[[2]string{w.SQL, w.Key}] != i {
			continue
		}
		j := 0
		for j < len(rows) && rows[j].SQL != w.SQL {
			j++
		}
		if j == len(rows) {
			rows = append(rows, Rows{SQL: w.SQL})
		}
		rows[j].Args = append(rows[j].Args, w.Args)
	}
	return rows, others
}

// Commit writes a group of statements in one transaction, in order.
type Commit func(ctx context.Context, ws []Write) error

// ErrClosed is returned for writes queued after Close.
var ErrClosed = errors.New("writebehind: store closed")

// item is what one Add queues: its statements are committed in the same
// transaction, never split between two commits (a route's result and its
// audit record: both or neither).
type item struct {
	w    Write      // the first statement (SQL "": a Flush marker)
	more []Write    // the others
	done chan error // nil: nobody waits for this write
}

func newItem(ws []Write, done chan error) item {
	it := item{done: done}
	if len(ws) > 0 {
		it.w = ws[0]
	}
	if len(ws) > 1 {
		it.more = append([]Write(nil), ws[1:]...) // a copy: the caller's slice stays on its stack
	}
	return it
}

// Writer is the group commit of one store.
type Writer struct {
	commit   Commit
	q        chan item
	maxBatch int
	mu       sync.RWMutex // held for reading while queuing, for writing by Close
	closed   bool
	stopped  chan struct{}
	onError  atomic.Pointer[func(err error, lost map[string]int)]
	failed   atomic.Pointer[error] // of the last commit; nil when it succeeded
	// Linger, when set before the first write, is how long a commit that
	// nobody waits for waits for more writes (until the batch is full or
	// a write that is waited for arrives): fewer, bigger commits at high
	// rates, for a little more time in the queue.
	Linger time.Duration
}

// New starts the writer of a store: queue holds at most queue writes
// waiting for a commit, and one commit takes at most maxBatch of them (with
// all their statements).
func New(commit Commit, queue, maxBatch int) *Writer {
	w := &Writer{commit: commit, q: make(chan item, max(queue, 1)), maxBatch: max(maxBatch, 1), stopped: make(chan struct{})}
	go w.loop()
	return w
}

// SetOnError makes f hear of each failed commit of writes nobody waits
// for: they are lost (a caller of AddWait gets the error instead); lost
// counts their statements by Kind. f runs on the writer's goroutine,
// before any waiter of that commit (or a later one) returns.
func (w *Writer) SetOnError(f func(err error, lost map[string]int)) { w.onError.Store(&f) }

// Err is the error of the last commit when it failed, nil once one
// succeeds: a store whose commits fail (a full disk) is not healthy, even
// if it answers reads.
func (w *Writer) Err() error {
	if e := w.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// Add queues the statements of one write, committed together in one
// transaction, and returns without waiting for their commit; it waits only
// while the queue is full (or until ctx ends).
func (w *Writer) Add(ctx context.Context, ws ...Write) error {
	return w.add(ctx, newItem(ws, nil))
}

// AddWait queues the statements of one write like Add and waits until they
// are committed (together with every write queued before them), returning
// the commit's error.
func (w *Writer) AddWait(ctx context.Context, ws ...Write) error {
	done := make(chan error, 1)
	if err := w.add(ctx, newItem(ws, done)); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush waits until every write queued before it is committed. Its error
// is that of the commit that would have held it (the last one), not of
// earlier ones.
func (w *Writer) Flush(ctx context.Context) error {
	return w.AddWait(ctx)
}

func (w *Writer) add(ctx context.Context, it item) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	select {
	case w.q <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close commits what is queued and stops the writer. Later writes fail
// with ErrClosed.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.q)
	}
	w.mu.Unlock()
	<-w.stopped
}

func (w *Writer) loop() {
	defer close(w.stopped)
	batch := make([]item, 0, w.maxBatch)
	ws := make([]Write, 0, w.maxBatch)
	var linger *time.Timer
	for first := range w.q {
		batch = append(batch[:0], first)
		waited := first.done != nil
	drain:
		for len(batch) < w.maxBatch {
			select {
			case it, ok := <-w.q:
				if !ok {
					break drain
				}
				batch = append(batch, it)
				waited = waited || it.done != nil
			default:
				break drain
			}
		}
		if !waited && w.Linger > 0 && len(batch) < w.maxBatch {
			if linger == nil {
				linger = time.NewTimer(w.Linger)
			} else {
				linger.Reset(w.Linger)
			}
		wait:
			for len(batch) < w.maxBatch {
				select {
				case it, ok := <-w.q:
					if !ok {
						break wait
					}
					batch = append(batch, it)
					if it.done != nil {
						break wait
					}
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
		ws = ws[:0]
		for _, it := range batch {
			if it.w.SQL != "" { // a Flush marker writes nothing
				ws = append(ws, it.w)
				ws = append(ws, it.more...)
			}
		}
		var err error
		if len(ws) > 0 {
			err = w.commit(context.Background(), ws)
			if err != nil {
				w.failed.Store(&err)
			} else {
				w.failed.Store(nil)
			}
		}
		// The loss is reported before any waiter of the batch returns.
		var lost map[string]int
		for i := range batch {
			if batch[i].done == nil && err != nil {
				lost = countKinds(lost, batch[i])
			}
		}
		if f := w.onError.Load(); lost != nil && f != nil {
			(*f)(err, lost)
		}
		for i := range batch {
			if batch[i].done != nil {
				batch[i].done <- err
			}
			batch[i] = item{}
		}
	}
}

// countKinds adds the statements of it to lost, by Kind ("other" when
// unnamed).
func countKinds(lost map[string]int, it item) map[string]int {
	if lost == nil {
		lost = map[string]int{}
	}
	for _, w := range append([]Write{it.w}, it.more...) {
		if w.SQL == "" {
			continue
		}
		k := w.Kind
		if k == "" {
			k = "other"
		}
		lost[k]++
	}
	return lost
}
