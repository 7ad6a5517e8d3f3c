package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"
)

// node is a JSON value with its members in document order and its encoded
// size.
type node struct {
	kind byte     // 'o' object, 'a' array, 's' string, 'l' number, true, false, null, 'r' not parsed yet
	keys []string // object member names, encoded
	kids []*node
	lit  []byte // an 's' or 'l' value, encoded; an 'r' value as it came
	str  string // an 's' value
	size int    // bytes of the encoding
	more int    // members past the parsed ones, only counted (an over-budget container)
}

// total is the number of members of a container.
func (n *node) total() int { return len(n.kids) + n.more }

// parse reads one JSON value, keeping member order and numbers as sent.
// At most max values are parsed: the rest stay raw (kind 'r', a slice of
// raw), parsed only if fit needs their insides; and a container keeps at
// most max/2+1 members (each takes 2 bytes or more, so one with more cannot
// fit in max), the rest only counted. It reads raw in place (no decoder,
// nothing allocated for what it only counts): the memory a shaping takes is
// so bounded by its budget (times the depth), not by the output's size.
func parse(raw []byte, max int) (*node, error) { return parseChecked(raw, max, false) }

// parseChecked is parse for raw that checked says is known to be valid
// JSON: it is not scanned a first time to know.
func parseChecked(raw []byte, max int, checked bool) (*node, error) {
	if len(raw) == 0 || !checked && !json.Valid(raw) {
		return nil, fmt.Errorf("not one JSON value")
	}
	p := &parser{raw: raw, left: max, kids: max/2 + 1}
	n, _ := p.value(skipSpace(raw, 0))
	return n, nil
}

type parser struct {
	raw  []byte
	left int // values still to parse
	kids int // members a container keeps
}

// value parses the value at i of p.raw (valid JSON) and returns the index
// past it.
func (p *parser) value(i int) (*node, int) {
	raw := p.raw
	if p.left <= 0 {
		end := skipValue(raw, i)
		return &node{kind: 'r', lit: raw[i:end], size: end - i}, end
	}
	p.left--
	switch c := raw[i]; c {
	case '{', '[':
		n := &node{kind: 'a'}
		end := byte(']')
		if c == '{' {
			n.kind, end = 'o', '}'
		}
		extra := 0 // bytes of the members only counted
		i = skipSpace(raw, i+1)
		for raw[i] != end {
			var key string
			if n.kind == 'o' {
				e := stringEnd(raw, i)
				key = string(encStr(unquote(raw[i:e])))
				i = skipSpace(raw, skipSpace(raw, e)+1)
			}
			if len(n.kids) >= p.kids {
				e := skipValue(raw, i)
				n.more++
				extra += len(key) + 1 + e - i + 1
				i = e
			} else {
				var kid *node
				kid, i = p.value(i)
				if n.kind == 'o' {
					n.keys = append(n.keys, key)
				}
				n.kids = append(n.kids, kid)
			}
			if i = skipSpace(raw, i); raw[i] == ',' {
				i = skipSpace(raw, i+1)
			}
		}
		n.resize()
		n.size += extra
		return n, i + 1
	case '"':
		e := stringEnd(raw, i)
		return strNode(unquote(raw[i:e])), e
	}
	e := skipValue(raw, i) // a number, true, false or null, as written
	return &node{kind: 'l', lit: raw[i:e], size: e - i}, e
}

// unquote decodes a JSON string (as encoding/json does: invalid UTF-8
// becomes U+FFFD).
func unquote(q []byte) string {
	body := q[1 : len(q)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

func strNode(s string) *node {
	b := encStr(s)
	return &node{kind: 's', str: s, lit: b, size: len(b)}
}

// encStr encodes s as JSON, without HTML escaping.
func encStr(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// fromAny is the node of a decoded value (objects in key order).
func fromAny(v any) *node {
	switch t := v.(type) {
	case map[string]any:
		n := &node{kind: 'o'}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			n.keys = append(n.keys, string(encStr(k)))
			n.kids = append(n.kids, fromAny(t[k]))
		}
		n.resize()
		return n
	case []any:
		n := &node{kind: 'a'}
		for _, e := range t {
			n.kids = append(n.kids, fromAny(e))
		}
		n.resize()
		return n
	case string:
		return strNode(t)
	default:
		b, _ := json.Marshal(t)
		return &node{kind: 'l', lit: b, size: len(b)}
	}
}

func (n *node) resize() {
	n.size = n.overhead(len(n.kids), false)
	for _, k := range n.kids {
		n.size += k.size
	}
}

// Marker members of cut containers: an array's last item, an object's
// member named "…".
const markerKey = `"…"`

func cutMarker(kind byte, cut int) *node {
	if kind == 'o' {
		return strNode(fmt.Sprintf("%s more members cut", group(cut)))
	}
	return strNode(fmt.Sprintf("… %s more items cut", group(cut)))
}

// overhead is the bytes of the first k members of n besides their values
// (brackets, names, colons, commas), plus a marker member's when marked.
func (n *node) overhead(k int, marked bool) int {
	o := 2
	if k > 0 {
		o += k - 1
	}
	if n.kind == 'o' {
		for _, key := range n.keys[:k] {
			o += len(key) + 1
		}
	}
	if marked {
		if k > 0 {
			o++
		}
		if n.kind == 'o' {
			o += len(markerKey) + 1
		}
		o += cutMarker(n.kind, n.total()).size
	}
	return o
}

// most is the most members of n that each get minShare within limit,
// with the marker of the rest when some are cut (linear in the members).
func (n *node) most(limit int) int {
	all := len(n.kids)
	if n.more == 0 && n.overhead(all, false)+all*minShare <= limit {
		return all
	}
	o := n.overhead(0, true) // brackets and the marker member
	k := 0
	for ; k < all; k++ {
		add := minShare + 1 // the member and its comma
		if n.kind == 'o' {
			add += len(n.keys[k]) + 1
		}
		if o+add > limit {
			break
		}
		o += add
	}
	return k
}

// minShare is the least room a kept member gets.
const minShare = 24

// fit returns n pruned to at most limit bytes (limit ≥ 5).
func fit(n *node, limit int) *node {
	if n.size <= limit {
		return n
	}
	switch n.kind {
	case 's':
		b := encodeString(n.str, limit, "")
		return &node{kind: 's', lit: b, size: len(b)}
	case 'l':
		return strNode("…")
	case 'r':
		inner, err := parse(n.lit, limit)
		if err != nil {
			return strNode("…")
		}
		return fit(inner, limit)
	}
	k := n.most(limit)
	if k == 0 {
		return summary(n, limit)
	}
	out := &node{kind: n.kind, kids: make([]*node, k)}
	if n.kind == 'o' {
		out.keys = slices.Clone(n.keys[:k])
	}
	// Water-filling: the smaller members whole, the rest share what is left.
	cut := k < n.total()
	avail := limit - n.overhead(k, cut)
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return n.kids[a].size - n.kids[b].size })
	for j, i := range order {
		share := avail / (k - j)
		out.kids[i] = fit(n.kids[i], share)
		avail -= out.kids[i].size
	}
	if cut {
		if n.kind == 'o' {
			out.keys = append(out.keys, markerKey)
		}
		out.kids = append(out.kids, cutMarker(n.kind, n.total()-k))
	}
	out.resize()
	return out
}

// summary replaces a container that cannot keep one member by a string
// saying what it was.
func summary(n *node, limit int) *node {
	s := strNode(fmt.Sprintf("[… %s items]", group(n.total())))
	if n.kind == 'o' {
		s = strNode(fmt.Sprintf("{… %s members}", group(n.total())))
	}
	if s.size > limit {
		return strNode("…")
	}
	return s
}

func (n *node) write(buf *bytes.Buffer) {
	switch n.kind {
	case 's', 'l', 'r':
		buf.Write(n.lit)
	default:
		open, end := byte('['), byte(']')
		if n.kind == 'o' {
			open, end = '{', '}'
		}
		buf.WriteByte(open)
		for i, k := range n.kids {
			if i > 0 {
				buf.WriteByte(',')
			}
			if n.kind == 'o' {
				buf.WriteString(n.keys[i])
				buf.WriteByte(':')
			}
			k.write(buf)
		}
		buf.WriteByte(end)
	}
}

// project is the part of raw the keep paths select, rebuilt with each
// node at its place (arrays compacted, items in index order, members in
// name order); nil when raw is not JSON or nothing is selected.
func project(raw []byte, keep []string) *node {
	paths, rs, simple := simpleQueries(keep)
	var doc any
	switch {
	case len(paths) == 0:
		return nil
	case simple && json.Valid(raw):
		doc, _ = pruned(raw, 0, rs)
	default:
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&doc) != nil {
			return nil
		}
	}
	var all jsonpath.LocatedNodeList
	for _, p := range paths {
		all = append(all, p.SelectLocated(doc)...)
	}
	if len(all) == 0 {
		return nil
	}
	all = all.Deduplicate()
	all.Sort()
	var root any
	for _, ln := range all {
		root = insert(root, ln.Path, ln.Node)
	}
	return fromOrdered(root)
}

// tree is a projection under construction: objects keep insertion order.
type tree struct {
	keys []string
	vals map[string]any
}

type list struct {
	items []any
	last  int // the index of the last item placed
}

// insert places v at path p (normalized: names and indexes) in root.
func insert(root any, p spec.NormalizedPath, v any) any {
	if len(p) == 0 {
		return v
	}
	switch sel := p[0].(type) {
	case spec.Name:
		t, ok := root.(*tree)
		if !ok && root != nil {
			return root // a whole value holds what is below it
		}
		if !ok {
			t = &tree{vals: map[string]any{}}
		}
		k := string(sel)
		if _, seen := t.vals[k]; !seen {
			t.keys = append(t.keys, k)
		}
		t.vals[k] = insert(t.vals[k], p[1:], v)
		return t
	case spec.Index:
		l, ok := root.(*list)
		if !ok && root != nil {
			return root
		}
		if !ok {
			l = &list{}
		}
		// Sorted paths: the same index is the last item placed.
		if len(p) > 1 && len(l.items) > 0 && l.last == int(sel) {
			l.items[len(l.items)-1] = insert(l.items[len(l.items)-1], p[1:], v)
		} else {
			l.items = append(l.items, insert(nil, p[1:], v))
		}
		l.last = int(sel)
		return l
	}
	return root
}

func fromOrdered(v any) *node {
	switch t := v.(type) {
	case *tree:
		n := &node{kind: 'o'}
		for _, k := range t.keys {
			n.keys = append(n.keys, string(encStr(k)))
			n.kids = append(n.kids, fromOrdered(t.vals[k]))
		}
		n.resize()
		return n
	case *list:
		n := &node{kind: 'a'}
		for _, e := range t.items {
			n.kids = append(n.kids, fromOrdered(e))
		}
		n.resize()
		return n
	}
	return fromAny(v)
}
