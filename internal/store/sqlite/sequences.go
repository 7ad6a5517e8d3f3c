package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

const (
	// seqBlock is how many sequences of a plan one durable commit
	// reserves (docs/operations.md "Storage and durability"). A crash skips the rest
	// of the reserved blocks; a clean Close gives it back.
	seqBlock = 1024
	// writeQueue bounds the writes waiting for the group commit;
	// writeBatch bounds one commit.
	writeQueue = 4096
	writeBatch = 512
	// writeLinger is how long a group commit nobody waits for waits for
	// more writes (writebehind.Writer.Linger). At moderate rates most of
	// a commit's CPU is its fixed part (the transaction, the log append),
	// so a longer linger means fewer, fuller commits; nothing waits for
	// it: a route answers before its commit, and a read of this store
	// (GetResult, Audit) flushes the queue first (bench/README.md,
	// decision table).
	writeLinger = 10 * time.Millisecond
)

// sequences are the blocks this store reserved, by plan. A route takes
// its sequence from memory; once a block is half used, the next one is
// reserved ahead, in the background, so that a route waits for the
// reservation's durable commit (an fsync) only when a burst uses a whole
// block before it is done. Nothing is handed out before its block is
// durably reserved, so a crash never repeats a sequence.
type sequences struct {
	mu     sync.Mutex
	blocks map[string]*block
	wg     sync.WaitGroup // reservations ahead in flight (Close waits)
}

// block hands out next up to end. ahead is a block reserved ahead that
// does not follow this one (another process reserved in between), taken
// when this one runs out; reserving is closed when the reservation ahead
// in flight ends (nil when none is).
type block struct {
	next, end            int64
	aheadStart, aheadEnd int64
	reserving            chan struct{}
}

// NextSequences implements store.Store: n sequences from the plan's
// block, reserving a new one (one durable commit) when it has fewer. A
// new block that follows the old one extends it; otherwise what was left
// of the old one is skipped, never handed out again.
func (s *Store) NextSequences(ctx context.Context, planID string, n int64) (int64, error) {
	if err := toolrouter.CheckSequences(planID, n); err != nil {
		return 0, err
	}
	s.seq.mu.Lock()
	defer s.seq.mu.Unlock()
	if s.seq.blocks == nil {
		s.seq.blocks = make(map[string]*block)
	}
	b := s.seq.blocks[planID]
	for b != nil && b.end-b.next < n && b.reserving != nil {
		// A burst outran the reservation ahead: wait for it.
		wait := b.reserving
		s.seq.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			s.seq.mu.Lock()
			return 0, fmt.Errorf("sqlite reserve sequences: %w", ctx.Err())
		}
		s.seq.mu.Lock()
		b = s.seq.blocks[planID]
	}
	if b != nil && b.end-b.next < n && b.aheadEnd-b.aheadStart >= n {
		b.next, b.end, b.aheadStart, b.aheadEnd = b.aheadStart, b.aheadEnd, 0, 0
	}
	if b == nil || b.end-b.next < n {
		size := max(seqBlock, n)
		start, err := s.reserve(ctx, planID, size)
		if err != nil {
			return 0, err
		}
		switch {
		case b != nil && start == b.end && b.end-b.next+size >= n:
			b.end = start + size
		default:
			b = &block{next: start, end: start + size}
			s.seq.blocks[planID] = b
		}
	}
	first := b.next
	b.next += n
	if b.end-b.next < seqBlock/2 && b.reserving == nil && b.aheadEnd == b.aheadStart {
		b.reserving = make(chan struct{})
		s.seq.wg.Add(1)
		go s.reserveAhead(planID, b)
	}
	return first, nil
}

// reserve reserves size sequences of the plan (one durable commit) and
// returns the first.
func (s *Store) reserve(ctx context.Context, planID string, size int64) (int64, error) {
	var start int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO plan_sequences (plan_id, next) VALUES (?, ?)
		ON CONFLICT (plan_id) DO UPDATE SET next = next + excluded.next
		RETURNING next - ?`, planID, size, size).Scan(&start)
	if err != nil {
		return 0, fmt.Errorf("sqlite reserve sequences: %w", err)
	}
	return start, nil
}

// reserveAhead reserves the block after b. A failure is not reported: the
// route that finds the block empty reserves one itself, and gets the error.
func (s *Store) reserveAhead(planID string, b *block) {
	defer s.seq.wg.Done()
	start, err := s.reserve(context.Background(), planID, seqBlock)
	s.seq.mu.Lock()
	defer s.seq.mu.Unlock()
	close(b.reserving)
	b.reserving = nil
	switch {
	case err != nil:
	case start == b.end:
		b.end += seqBlock
	default:
		b.aheadStart, b.aheadEnd = start, start+seqBlock
	}
}

// giveBack returns the unused tail of each block, when no other process
// reserved after it (compare and set), so that after a clean stop the
// plans continue where they stopped. It first waits for the reservations
// ahead in flight.
func (s *Store) giveBack() error {
	s.seq.wg.Wait()
	s.seq.mu.Lock()
	defer s.seq.mu.Unlock()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite give back sequences: %w", err)
	}
	for plan, b := range s.seq.blocks {
		next, end := b.next, b.end
		if b.aheadEnd > b.aheadStart {
			next, end = b.aheadStart, b.aheadEnd // the rest of the current block is skipped
		}
		if next == end {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE plan_sequences SET next = ? WHERE plan_id = ? AND next = ?`,
			next, plan, end); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlite give back sequences: %w", err)
		}
	}
	s.seq.blocks = nil
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite give back sequences: %w", err)
	}
	return nil
}
