package memory

// slot is an entry of a slotIndex: its fixed-size key, and whether it was
// deleted.
type slot interface {
	state() (key [2]uint64, dead bool)
}

// slotIndex is the order of storing of pointer-free entries (results,
// ledger entries) and a map of their keys to their places, base+i for
// slots[i]; a deleted entry stays a dead slot until compact drops it.
// Guarded by Store.mu.
type slotIndex[S slot] struct {
	index map[[2]uint64]int64
	slots []S
	base  int64
	live  int
}

// compact drops the dead slots at the front and, once at most half the
// slots are live, moves the live ones to a new slice, so that slots is at
// most about twice the entries stored.
func (l *slotIndex[S]) compact() {
	i := 0
	for i < len(l.slots) {
		if _, dead := l.slots[i].state(); !dead {
			break
		}
		i++
	}
	l.slots, l.base = l.slots[i:], l.base+int64(i)
	if len(l.slots) <= 2*l.live+64 && cap(l.slots) <= 4*(l.live+64) {
		return
	}
	kept := make([]S, 0, 2*l.live+64)
	for _, s := range l.slots {
		if key, dead := s.state(); !dead {
			l.index[key] = l.base + int64(len(kept))
			kept = append(kept, s)
		}
	}
	l.slots = kept
}
