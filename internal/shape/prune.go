package shape

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"
)

// Keep queries without decoding the whole output (issue 32, finding 6:
// a 16 MiB array of numbers decoded to []any for keep peaked at 747 MiB).
// When every keep query is made of child segments of names, non-negative
// indexes, wildcards and slices with non-negative bounds and a positive
// step, the output is walked once and only what the queries can reach is
// decoded: the members they name, the items up to the last index they
// take (the others as null placeholders, so indexes stay), and the nodes
// they select, whole. The queries then select on that pruned document what
// they would on the whole one. Other queries (descendants, filters,
// negative indexes) decode the output whole, as before.

// reach is a keep query and how many of its segments matched so far.
type reach struct {
	segs  []*spec.Segment
	depth int
}

// simpleQueries are the parsed keep paths, and whether all of them can
// be walked.
func simpleQueries(keep []string) ([]*jsonpath.Path, []reach, bool) {
	var paths []*jsonpath.Path
	var rs []reach
	simple := true
	for _, q := range keep {
		p, err := jsonpath.Parse(q)
		if err != nil {
			continue // the registry checked them (CheckKeep)
		}
		paths = append(paths, p)
		segs := p.Query().Segments()
		for _, s := range segs {
			if s.IsDescendant() {
				simple = false
			}
			for _, sel := range s.Selectors() {
				switch x := sel.(type) {
				case spec.Name, spec.WildcardSelector:
				case spec.Index:
					simple = simple && x >= 0
				case spec.SliceSelector:
					simple = simple && x.Start() >= 0 && x.End() >= 0 && x.Step() > 0
				default:
					simple = false
				}
			}
		}
		rs = append(rs, reach{segs: segs})
	}
	return paths, rs, simple
}

// matches reports whether the selectors of segment s take the member
// named name (isName) or the item at index.
func matches(s *spec.Segment, name string, index int, isName bool) bool {
	for _, sel := range s.Selectors() {
		switch x := sel.(type) {
		case spec.WildcardSelector:
			return true
		case spec.Name:
			if isName && string(x) == name {
				return true
			}
		case spec.Index:
			if !isName && int(x) == index {
				return true
			}
		case spec.SliceSelector:
			if !isName && index >= x.Start() && index < x.End() && (index-x.Start())%x.Step() == 0 {
				return true
			}
		}
	}
	return false
}

// lastIndex is the last array index the segments' selectors can take
// (math.MaxInt: all).
func lastIndex(rs []reach) int {
	last := -1
	for _, r := range rs {
		for _, sel := range r.segs[r.depth].Selectors() {
			switch x := sel.(type) {
			case spec.WildcardSelector:
				return math.MaxInt
			case spec.Index:
				last = max(last, int(x))
			case spec.SliceSelector:
				if x.End() == math.MaxInt {
					return math.MaxInt
				}
				last = max(last, x.End()-1)
			}
		}
	}
	return last
}

// pruned decodes the value at raw[i:] as far as rs reach into it (nil
// where they do not), and returns it with the index past it. raw is valid
// JSON.
func pruned(raw []byte, i int, rs []reach) (any, int) {
	i = skipSpace(raw, i)
	for _, r := range rs {
		if r.depth == len(r.segs) { // selected: the whole value
			end := skipValue(raw, i)
			dec := json.NewDecoder(bytes.NewReader(raw[i:end]))
			dec.UseNumber()
			var v any
			_ = dec.Decode(&v)
			return v, end
		}
	}
	switch raw[i] {
	case '{':
		obj := map[string]any{}
		i = skipSpace(raw, i+1)
		for raw[i] != '}' {
			end := stringEnd(raw, i)
			var name string
			_ = json.Unmarshal(raw[i:end], &name)
			i = skipSpace(raw, end) + 1 // the colon
			var next []reach
			for _, r := range rs {
				if matches(r.segs[r.depth], name, 0, true) {
					next = append(next, reach{r.segs, r.depth + 1})
				}
			}
			if len(next) > 0 {
				obj[name], i = pruned(raw, i, next)
			} else {
				i = skipValue(raw, skipSpace(raw, i))
			}
			if i = skipSpace(raw, i); raw[i] == ',' {
				i = skipSpace(raw, i+1)
			}
		}
		return obj, i + 1
	case '[':
		last := lastIndex(rs)
		var arr []any
		i = skipSpace(raw, i+1)
		for k := 0; raw[i] != ']'; k++ {
			var next []reach
			if k <= last {
				for _, r := range rs {
					if matches(r.segs[r.depth], "", k, false) {
						next = append(next, reach{r.segs, r.depth + 1})
					}
				}
			}
			var v any
			if len(next) > 0 {
				v, i = pruned(raw, i, next)
			} else {
				i = skipValue(raw, i)
			}
			if k <= last {
				arr = append(arr, v)
			}
			if i = skipSpace(raw, i); raw[i] == ',' {
				i = skipSpace(raw, i+1)
			}
		}
		if arr == nil {
			arr = []any{}
		}
		return arr, i + 1
	}
	return nil, skipValue(raw, i) // a scalar the queries go past
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index past the JSON string starting at i.
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// skipValue is the index past the JSON value starting at i.
func skipValue(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				j = stringEnd(raw, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(raw)
	}
	j := i
	for j < len(raw) && !bytes.ContainsRune([]byte(",]} \t\n\r"), rune(raw[j])) {
		j++
	}
	return j
}
