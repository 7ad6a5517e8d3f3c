package shape

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// tokenizer counts OpenAI o200k_base tokens, the counts of tiktoken's
// encode_ordinary, in time linear in the text (n log n for one long
// piece): the pieces of o200k's split pattern are found by one scan
// (split, which follows the pattern's backtracking rule by rule rather
// than running a backtracking regexp), and each piece is merged with a
// heap (bpe) instead of rescanning the piece for every merge, which is
// quadratic in the piece: 150 kB of spaces took 42 s of CPU that way.
type tokenizer struct {
	ranks map[string]int
}

// newTokenizer loads o200k_base from the BPE file embedded in the binary
// (no download).
func newTokenizer() (*tokenizer, error) {
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe("o200k_base.tiktoken")
	if err != nil {
		return nil, fmt.Errorf("load o200k_base: %w", err)
	}
	return &tokenizer{ranks: ranks}, nil
}

// meter is what counting cost: bytes scanned, and the steps of merging
// (rank look-ups and heap moves), for tests that bound them.
type meter struct {
	bytes, steps int
}

// run counts as count does, appending the tokens to ids when not nil.
func (t *tokenizer) run(s string, limit int, m *meter, ids *[]int) (n, covered int) {
	if !utf8.ValidString(s) {
		s = validUTF8(s)
	}
	b := bpe{ids: ids}
	for p := 0; p < len(s); {
		end := nextPiece(s, p)
		// A piece longer than maxPiece (16 MiB of letters is one) is
		// merged in chunks: the merge's buffers grow with the piece, about
		// 70 bytes per byte, and a budget is checked between chunks. Only
		// the chunks' edges can count differently from tiktoken.
		for p < end {
			e := end
			if e-p > maxPiece {
				e = p + maxPiece
				for e > p+1 && !utf8.RuneStart(s[e]) {
					e--
				}
			}
			n += b.tokens(s[p:e], t.ranks, m)
			m.bytes += e - p
			p = e
			if limit >= 0 && n > limit {
				return n, p
			}
		}
	}
	return n, len(s)
}

// maxPiece bounds the bytes of one byte pair merge (see run).
const maxPiece = 16 << 10

// validUTF8 replaces each byte of s that is not part of valid UTF-8 by
// U+FFFD, as tiktoken's conversion of the text to runes does.
func validUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String()
}

// Character classes of o200k's split pattern.
const (
	cL     = 1 << iota // \p{L}
	cN                 // \p{N}
	cSpace             // \s (unicode.IsSpace, as regexp2 has it)
	cU                 // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cW                 // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = slowClass(r)
	}
	return t
}()

func slowClass(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= cL
	}
	if unicode.IsNumber(r) {
		c |= cN
	}
	if unicode.IsSpace(r) {
		c |= cSpace
	}
	mark := unicode.IsMark(r)
	if mark || unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo) {
		c |= cU
	}
	if mark || unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo) {
		c |= cW
	}
	return c
}

// at is the class and width of the character at i of s (0, 0 past the end).
func at(s string, i int) (rune, uint8, int) {
	if i >= len(s) {
		return -1, 0, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return rune(b), asciiClass[b], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return r, slowClass(r), w
}

// prefix is [^\r\n\p{L}\p{N}].
func prefix(r rune, c uint8) bool { return r >= 0 && r != '\r' && r != '\n' && c&(cL|cN) == 0 }

// nextPiece is the end of the piece of s that starts at p: the match of
// o200k_base's pattern
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}
//	| ?[^\s\p{L}\p{N}]+[\r\n/]*
//	|\s*[\r\n]+
//	|\s+(?!\S)
//	|\s+
//
// at p, alternatives tried in order with the backtracking a regexp engine
// would do, each in time linear in what it reads (every character starts
// a match of some alternative, so the matches tile the text).
func nextPiece(s string, p int) int {
	r, c, w := at(s, p)
	// 1 and 2: letters, with an optional prefix character.
	for _, alt := range [2]func(string, int) int{lowerEnded, upperRun} {
		if prefix(r, c) {
			if e := alt(s, p+w); e >= 0 {
				return e
			}
		}
		if e := alt(s, p); e >= 0 {
			return e
		}
	}
	// 3: one to three digits.
	if c&cN != 0 {
		e := p + w
		for range 2 {
			_, c2, w2 := at(s, e)
			if c2&cN == 0 {
				break
			}
			e += w2
		}
		return e
	}
	// 4: punctuation, with an optional space before and newlines or
	// slashes after.
	punct := func(c uint8, w int) bool { return w > 0 && c&(cSpace|cL|cN) == 0 }
	start := -1
	if r == ' ' {
		if _, c2, w2 := at(s, p+1); punct(c2, w2) {
			start = p + 1
		}
	} else if punct(c, w) {
		start = p
	}
	if start >= 0 {
		e := start
		for {
			_, c2, w2 := at(s, e)
			if !punct(c2, w2) {
				break
			}
			e += w2
		}
		for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
			e++
		}
		return e
	}
	// 5, 6 and 7: white space (c has cSpace: every character matched one
	// of the alternatives above or is white space).
	e, last, newline := p, p, -1
	for {
		r2, c2, w2 := at(s, e)
		if c2&cSpace == 0 {
			break
		}
		if r2 == '\r' || r2 == '\n' {
			newline = e
		}
		last = e
		e += w2
	}
	switch {
	case e == p: // not reached: a character no alternative matches
		return p + max(w, 1)
	case newline >= 0: // \s*[\r\n]+: up to the last newline
		return newline + 1
	case e == len(s): // \s+(?!\S) at the end
		return e
	case last > p: // \s+(?!\S): all but the last, which goes with what follows
		return last
	}
	return e // \s+
}

// lowerEnded matches [U]*[W]+ contraction? at q (-1: no match). Greedy
// with backtracking: the U run gives back characters until one that is
// also W can start the W run.
func lowerEnded(s string, q int) int {
	i, lastW := q, -1
	var lastWidth int
	for {
		_, c, w := at(s, i)
		if c&cU == 0 {
			break
		}
		if c&cW != 0 {
			lastW, lastWidth = i, w
		}
		i += w
	}
	if _, c, _ := at(s, i); c&cW != 0 {
		return contraction(s, wRun(s, i))
	}
	if lastW < 0 {
		return -1
	}
	// The W run from lastW is that one character: what follows it up to
	// the end of the U run is not W.
	return contraction(s, lastW+lastWidth)
}

// upperRun matches [U]+[W]* contraction? at q (-1: no match).
func upperRun(s string, q int) int {
	i := q
	for {
		_, c, w := at(s, i)
		if c&cU == 0 {
			break
		}
		i += w
	}
	if i == q {
		return -1
	}
	return contraction(s, wRun(s, i))
}

func wRun(s string, i int) int {
	for {
		_, c, w := at(s, i)
		if c&cW == 0 {
			return i
		}
		i += w
	}
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d)? at i.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2]|0x20 == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2]|0x20 == 'l' {
			return i + 3
		}
	}
	return i
}

// bpe merges pieces; its slices are reused from piece to piece.
type bpe struct {
	start, next, prev, rank, ver []int
	h                            mergeHeap
	ids                          *[]int // when set, the tokens' ranks are appended to it (tests)
}

// tokens is the number of tokens of piece: the pair of adjacent parts
// whose joined bytes have the lowest rank is merged first (the leftmost of
// equal ones), until no joined pair is a token — tiktoken's byte pair
// merge, with a heap of the candidate pairs.
func (b *bpe) tokens(piece string, ranks map[string]int, m *meter) int {
	m.steps++
	if r, ok := ranks[piece]; ok {
		if b.ids != nil {
			*b.ids = append(*b.ids, r)
		}
		return 1
	}
	n := len(piece)
	b.start, b.next, b.prev, b.rank, b.ver = grow(b.start, n+1), grow(b.next, n), grow(b.prev, n), grow(b.rank, n), grow(b.ver, n)
	for i := range n {
		b.start[i], b.next[i], b.prev[i], b.ver[i] = i, i+1, i-1, 0
	}
	b.start[n] = n
	b.h.items = b.h.items[:0]
	// pairRank is the rank of part i joined with the part after it.
	pairRank := func(i int) int {
		j := b.next[i]
		if j >= n {
			return -1
		}
		end := n
		if k := b.next[j]; k < n {
			end = b.start[k]
		}
		m.steps++
		r, ok := ranks[piece[b.start[i]:end]]
		if !ok {
			return -1
		}
		return r
	}
	push := func(i int) {
		b.ver[i]++
		if b.rank[i] = pairRank(i); b.rank[i] >= 0 {
			b.h.push(mergeItem{rank: b.rank[i], pos: b.start[i], part: i, ver: b.ver[i]})
		}
	}
	for i := range n - 1 {
		push(i)
	}
	parts := n
	for len(b.h.items) > 0 {
		it := b.h.pop()
		m.steps += 1 + logSteps(len(b.h.items))
		if it.ver != b.ver[it.part] { // stale: the part changed since
			continue
		}
		i := it.part
		j := b.next[i] // merged into i
		b.next[i] = b.next[j]
		if k := b.next[j]; k < n {
			b.prev[k] = i
		}
		b.ver[j]++
		parts--
		push(i)
		if p := b.prev[i]; p >= 0 {
			push(p)
		}
	}
	if b.ids != nil {
		for i := 0; i < n; i = b.next[i] {
			*b.ids = append(*b.ids, ranks[piece[b.start[i]:b.start[b.next[i]]]])
		}
	}
	return parts
}

func grow(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// logSteps is about log2(n): the moves of one heap operation.
func logSteps(n int) int {
	k := 0
	for ; n > 1; n >>= 1 {
		k++
	}
	return k
}

type mergeItem struct{ rank, pos, part, ver int }

// mergeHeap is a binary min-heap of candidate merges, by rank, then
// position.
type mergeHeap struct{ items []mergeItem }

func (x mergeItem) less(y mergeItem) bool {
	return x.rank < y.rank || x.rank == y.rank && x.pos < y.pos
}

func (h *mergeHeap) push(it mergeItem) {
	h.items = append(h.items, it)
	for i := len(h.items) - 1; i > 0; {
		up := (i - 1) / 2
		if !h.items[i].less(h.items[up]) {
			break
		}
		h.items[i], h.items[up] = h.items[up], h.items[i]
		i = up
	}
}

func (h *mergeHeap) pop() mergeItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < last && h.items[l].less(h.items[small]) {
			small = l
		}
		if r := l + 1; r < last && h.items[r].less(h.items[small]) {
			small = r
		}
		if small == i {
			break
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
	return top
}
