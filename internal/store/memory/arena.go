package memory

// arena holds records' encoded bytes in chunks of arenaChunk bytes, so
// that what a bounded log keeps is a few large pointer-free allocations
// the garbage collector does not scan (issue 37: on one core, each
// cycle's mark work was proportional to the records kept). A record's
// bytes are written once and never changed; a chunk is dropped when the
// last record in it is freed (a reader still holding a record's bytes
// keeps its chunk alive). Guarded by Store.mu.
type arena struct {
	chunks []arenaChunk // chunks[i] is chunk first+i
	first  int64
}

type arenaChunk struct {
	buf  []byte // nil once dropped
	live int    // bytes of records not yet freed
}

// arenaChunkSize is a chunk's capacity; a larger record has a chunk of
// its own size.
const arenaChunkSize = 64 << 10

// blobRef is where a record's bytes are in an arena: fixed-size, no
// pointer.
type blobRef struct {
	chunk  int64
	off, n uint32
}

// put appends the bytes of a record made of head, then mid, then tail
// (any may be empty) and returns where they are.
func (a *arena) put(head []byte, mid string, tail []byte) blobRef {
	n := len(head) + len(mid) + len(tail)
	last := len(a.chunks) - 1
	if last < 0 || cap(a.chunks[last].buf)-len(a.chunks[last].buf) < n {
		if last >= 0 && a.chunks[last].live == 0 {
			a.chunks[last].buf = nil // full, and every record in it freed
		}
		a.chunks = append(a.chunks, arenaChunk{buf: make([]byte, 0, max(arenaChunkSize, n))})
		a.popFront()
		last = len(a.chunks) - 1
	}
	c := &a.chunks[last]
	off := len(c.buf)
	c.buf = append(append(append(c.buf, head...), mid...), tail...)
	c.live += n
	return blobRef{chunk: a.first + int64(last), off: uint32(off), n: uint32(n)}
}

// get returns the bytes of the record at r, which must not be changed.
func (a *arena) get(r blobRef) []byte {
	return a.chunks[r.chunk-a.first].buf[r.off : r.off+r.n : r.off+r.n]
}

// free forgets the record at r; its chunk is dropped once it holds no
// record, and dropped chunks leave the front of chunks.
func (a *arena) free(r blobRef) {
	i := r.chunk - a.first
	c := &a.chunks[i]
	c.live -= int(r.n)
	if c.live == 0 && int(i) != len(a.chunks)-1 {
		c.buf = nil
	}
	a.popFront()
}

// popFront drops the dropped chunks at the front.
func (a *arena) popFront() {
	for len(a.chunks) > 1 && a.chunks[0].buf == nil {
		a.chunks[0] = arenaChunk{}
		a.chunks = a.chunks[1:]
		a.first++
	}
}

// size is the bytes of the chunks kept, for tests.
func (a *arena) size() (n int) {
	for _, c := range a.chunks {
		n += cap(c.buf)
	}
	return n
}
