package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/theory/jsonpath"
)

// wholeProject is project as it was: the output decoded whole.
func wholeProject(raw []byte, keep []string) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return "invalid"
	}
	var all jsonpath.LocatedNodeList
	for _, q := range keep {
		all = append(all, jsonpath.MustParse(q).SelectLocated(doc)...)
	}
	if len(all) == 0 {
		return "nil"
	}
	all = all.Deduplicate()
	all.Sort()
	var root any
	for _, ln := range all {
		root = insert(root, ln.Path, ln.Node)
	}
	var buf bytes.Buffer
	fromOrdered(root).write(&buf)
	return buf.String()
}

// TestPrunedKeepSelectsAsWhole: keep queries select on the pruned walk
// what they select on the whole decoded output.
func TestPrunedKeepSelectsAsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	names := []string{"a", "b", "items", "id", "x y"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(6); {
		case depth > 3 || k == 0:
			return []any{1, "s", true, nil, 2.5, strings.Repeat("z", 30)}[r.IntN(6)]
		case k <= 2:
			a := make([]any, r.IntN(8))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		default:
			m := map[string]any{}
			for range r.IntN(5) {
				m[names[r.IntN(len(names))]] = gen(depth + 1)
			}
			return m
		}
	}
	sel := func() string {
		switch r.IntN(6) {
		case 0:
			return "[*]"
		case 1:
			return fmt.Sprintf("[%d]", r.IntN(5))
		case 2:
			return fmt.Sprintf("[%d:%d]", r.IntN(3), r.IntN(6))
		case 3:
			return fmt.Sprintf("[%d::2]", r.IntN(3))
		case 4:
			return fmt.Sprintf("['%s','%s']", names[r.IntN(len(names))], names[r.IntN(len(names))])
		}
		return "." + names[r.IntN(3)]
	}
	for i := range 3000 {
		raw, _ := json.MarshalIndent(gen(0), "", " ")
		var keep []string
		for range 1 + r.IntN(3) {
			q := "$"
			for range r.IntN(4) {
				q += sel()
			}
			keep = append(keep, q)
		}
		if _, _, simple := simpleQueries(keep); !simple {
			t.Fatalf("%v: not walked", keep)
		}
		var got string
		if n := project(raw, keep); n == nil {
			got = "nil"
		} else {
			var buf bytes.Buffer
			n.write(&buf)
			got = buf.String()
		}
		if want := wholeProject(raw, keep); got != want {
			t.Fatalf("case %d %v:\ngot  %s\nwant %s\ndoc  %s", i, keep, got, want, raw)
		}
	}
	// Queries the walk cannot follow decode the output whole.
	raw := []byte(`{"items":[{"id":1},{"id":2},{"id":3}]}`)
	for _, q := range []string{"$..id", "$.items[-1]", "$.items[?@.id>1]", "$.items[::-1]"} {
		if _, _, simple := simpleQueries([]string{q}); simple {
			t.Errorf("%s walked", q)
		}
		var buf bytes.Buffer
		project(raw, []string{q}).write(&buf)
		if want := wholeProject(raw, []string{q}); buf.String() != want {
			t.Errorf("%s: %s, want %s", q, buf.String(), want)
		}
	}
}

// TestKeepMemory (issue 32, finding 6): shaping a 4 MiB array of small
// numbers with keep allocates about its size, not the ~50 bytes a byte of
// decoding it to []any (16 MiB peaked at 747 MiB).
func TestKeepMemory(t *testing.T) {
	raw := []byte(`{"total":3,"items":[` + strings.TrimSuffix(strings.Repeat("7,", 2<<20), ",") + `]}`)
	s := New()
	b := budgetTokens(0)
	b.Bytes, b.Keep = 4096, []string{"$.items[0:20]", "$.total"}
	s.Output([]byte(`[1]`), b, "")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, cut := s.Output(raw, b, "GET /results/tc_k")
	runtime.ReadMemStats(&after)
	if !cut || !strings.HasPrefix(string(got), `{"items":[7,7,7`) {
		t.Fatalf("cut %v: %.200s", cut, got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*uint64(len(raw)) {
		t.Errorf("shaping %d bytes with keep allocated %d", len(raw), alloc)
	}
}

// TestShapeMemory (finding 6): shaping a 4 MiB array of small numbers
// without keep, as an output and as an MCP result's structuredContent,
// allocates a few times its size at most (the decoder it used allocated
// ~60 bytes a byte, and the MCP result was decoded to map[string]any).
func TestShapeMemory(t *testing.T) {
	raw := []byte(`{"total":3,"items":[` + strings.TrimSuffix(strings.Repeat("7,", 2<<20), ",") + `]}`)
	mcp := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("t", 1<<20) + `"}],"structuredContent":` + string(raw) + `}`)
	s := New()
	b := budgetTokens(0)
	b.Bytes = 4096
	for name, shape := range map[string]func() []byte{
		"output": func() []byte { out, _ := s.Output(raw, b, "GET /results/tc_m"); return out },
		"mcp":    func() []byte { return s.MCPResult(mcp, 4096, nil, "GET /results/tc_m") },
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out := shape()
		runtime.ReadMemStats(&after)
		if len(out) > 2*4096+512 || !json.Valid(out) {
			t.Errorf("%s: %d bytes, valid %v", name, len(out), json.Valid(out))
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes allocated for %d", name, alloc, len(mcp))
		if alloc > 4*uint64(len(mcp)) {
			t.Errorf("%s: shaping %d bytes allocated %d", name, len(raw), alloc)
		}
	}
}
