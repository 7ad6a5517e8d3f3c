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
	cur    int64 // the chunk put appends to, when curOK
	curOK  bool
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
	if !a.curOK || cap(a.chunks[a.cur-a.first].buf)-len(a.chunks[a.cur-a.first].buf) < n {
		if a.curOK && a.chunks[a.cur-a.first].live == 0 {
			a.chunks[a.cur-a.first].buf = nil // full, and every record in it freed
		}
		a.chunks = append(a.chunks, arenaChunk{buf: make([]byte, 0, max(arenaChunkSize, n))})
		a.cur, a.curOK = a.first+int64(len(a.chunks)-1), true
		a.popFront()
	}
	c := &a.chunks[a.cur-a.first]
	off := len(c.buf)
	c.buf = append(append(append(c.buf, head...), mid...), tail...)
	c.live += n
	return blobRef{chunk: a.cur, off: uint32(off), n: uint32(n)}
}

// adopt takes b, which its caller will not change, as a record of a
// chunk of its own, without copying it: a large record (a big tool
// output's result) is not held twice while it is stored.
func (a *arena) adopt(b []byte) blobRef {
	a.chunks = append(a.chunks, arenaChunk{buf: b[:len(b):len(b)], live: len(b)})
	return blobRef{chunk: a.first + int64(len(a.chunks)-1), n: uint32(len(b))}
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
	if c.live == 0 && !(a.curOK && r.chunk == a.cur) {
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
