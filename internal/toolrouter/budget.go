package toolrouter

import "sync/atomic"

// Budget is a number of output bytes shared by several calls: the calls of
// one batch, whose outputs are held together (TOOLROUTER_MAX_BATCH_OUTPUT_BYTES).
// A call whose reply declares its length reserves it before reading, so
// that a reply that cannot be kept is never read into memory.
type Budget struct {
	total int64
	left  atomic.Int64
}

// NewBudget returns a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{total: n}
	b.left.Store(n)
	return b
}

// Take reserves n bytes, or reports that fewer are left.
func (b *Budget) Take(n int64) bool {
	for {
		left := b.left.Load()
		if n > left {
			return false
		}
		if b.left.CompareAndSwap(left, left-n) {
			return true
		}
	}
}

// Give returns n bytes taken for an output that was not kept.
func (b *Budget) Give(n int64) { b.left.Add(n) }

// Exceeded is the failure of a call whose output of n bytes does not fit.
func (b *Budget) Exceeded(n int64) Outcome {
	return Failure(CategoryResource, "the batch's outputs exceed TOOLROUTER_MAX_BATCH_OUTPUT_BYTES (%d bytes): this output of %d bytes was dropped", b.total, n)
}
