package memory

import (
	"encoding/binary"
	"hash/maphash"
	"time"
)

// resultLog is the stored results, oldest first (MaxResults deletes from
// the front), kept so that the garbage collector has nothing to scan in
// it (issue 37): each result's key and encoded form are one record in an
// arena, found through a map of fixed-size keys (hashKey) to its place in
// slots, whose entries hold no pointer. Guarded by Store.mu.
type resultLog struct {
	slotIndex[resultSlot] // key → place in the order of storing
	data                  arena
}

type resultSlot struct {
	key  [2]uint64
	at   int64   // when stored (Unix nanoseconds; retention)
	ref  blobRef // the key, then the encoded result; or the key alone (big)
	big  blobRef // the encoded result when big
	dead bool
}

func (s resultSlot) state() ([2]uint64, bool) { return s.key, s.dead }

// bigResult is the size from which a result's bytes are adopted by the
// arena (arena.adopt) instead of copied.
const bigResult = arenaChunkSize / 4

// hashKey is the fixed-size key of s: two independent seeded 64-bit
// hashes. Two keys with the same hashKey are taken as one (a chance of
// about n²/2¹²⁹ for n keys kept: none in practice); a record's own key is
// kept with it and checked when it is read, so a read never answers
// another key's record.
func (m *Store) hashKey(s string) [2]uint64 {
	return [2]uint64{maphash.String(m.seeds[0], s), maphash.String(m.seeds[1], s)}
}

// saveResult stores b, the encoded result of key; m.mu is held. A result
// stored again (a held call's decision) keeps its place in the order.
func (m *Store) saveResult(key string, b []byte) {
	l := &m.res
	if l.index == nil {
		l.index = make(map[[2]uint64]int64)
	}
	var head [binary.MaxVarintLen64]byte
	h, now := m.hashKey(key), m.Now().UnixNano()
	slot := resultSlot{key: h, at: now}
	if len(b) >= bigResult {
		slot.ref = l.data.put(binary.AppendUvarint(head[:0], uint64(len(key))), key, nil)
		slot.big = l.data.adopt(b)
	} else {
		slot.ref = l.data.put(binary.AppendUvarint(head[:0], uint64(len(key))), key, b)
	}
	if at, ok := l.index[h]; ok {
		s := &l.slots[at-l.base]
		l.free(s)
		*s = slot
		return
	}
	l.index[h] = l.base + int64(len(l.slots))
	l.slots = append(l.slots, slot)
	l.live++
	for l.live > max(m.MaxResults, 1) {
		m.deleteOldest()
	}
}

// result is the encoded result of key, not to be changed; m.mu is held.
func (m *Store) result(key string) ([]byte, bool) {
	l := &m.res
	at, ok := l.index[m.hashKey(key)]
	if !ok {
		return nil, false
	}
	s := &l.slots[at-l.base]
	b := l.data.get(s.ref)
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n || string(b[w:w+int(n)]) != key {
		return nil, false
	}
	if s.big.n > 0 {
		return l.data.get(s.big), true
	}
	return b[w+int(n):], true
}

// free frees the records of s.
func (l *resultLog) free(s *resultSlot) {
	l.data.free(s.ref)
	if s.big.n > 0 {
		l.data.free(s.big)
	}
}

// deleteOldest deletes the oldest result still stored; m.mu is held.
func (m *Store) deleteOldest() {
	l := &m.res
	for i := range l.slots {
		if !l.slots[i].dead {
			m.deleteResult(i)
			break
		}
	}
	m.res.compact()
}

// deleteResult deletes the result in slots[i]; m.mu is held.
func (m *Store) deleteResult(i int) {
	l := &m.res
	s := &l.slots[i]
	delete(l.index, s.key)
	l.free(s)
	*s = resultSlot{dead: true}
	l.live--
}

// deleteResultsBefore deletes at most limit results stored before
// before, oldest first, and returns how many; m.mu is held.
func (m *Store) deleteResultsBefore(before time.Time, limit int) int {
	l, cut, n := &m.res, before.UnixNano(), 0
	for i := range l.slots {
		if n == limit {
			break
		}
		if s := &l.slots[i]; !s.dead && s.at < cut {
			m.deleteResult(i)
			n++
		}
	}
	if n > 0 {
		m.res.compact()
	}
	return n
}
