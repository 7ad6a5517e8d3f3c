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
	// reserves: a route takes its sequence from memory, and only one in
	// seqBlock commits (README "Storage and durability"). A crash skips
	// the rest of the block; a clean Close gives it back.
	seqBlock = 1024
	// writeQueue bounds the writes waiting for the group commit;
	// writeBatch bounds one commit.
	writeQueue = 4096
	writeBatch = 512
	// writeLinger is how long a group commit nobody waits for waits for
	// more writes (writebehind.Writer.Linger).
	writeLinger = 2 * time.Millisecond
)

// sequences are the blocks this store reserved, by plan: next is handed
// out next, end is the first number not reserved.
type sequences struct {
	mu     sync.Mutex
	blocks map[string]*block
}

type block struct{ next, end int64 }

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
	if b == nil || b.end-b.next < n {
		size := max(seqBlock, n)
		var start int64
		err := s.db.QueryRowContext(ctx, `INSERT INTO plan_sequences (plan_id, next) VALUES (?, ?)
			ON CONFLICT (plan_id) DO UPDATE SET next = next + excluded.next
			RETURNING next - ?`, planID, size, size).Scan(&start)
		if err != nil {
			return 0, fmt.Errorf("sqlite reserve sequences: %w", err)
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
	return first, nil
}

// giveBack returns the unused tail of each block, when no other process
// reserved after it (compare and set), so that after a clean stop the
// plans continue where they stopped.
func (s *Store) giveBack() error {
	s.seq.mu.Lock()
	defer s.seq.mu.Unlock()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite give back sequences: %w", err)
	}
	for plan, b := range s.seq.blocks {
		if b.next == b.end {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE plan_sequences SET next = ? WHERE plan_id = ? AND next = ?`,
			b.next, plan, b.end); err != nil {
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
