package vserver

import (
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"

	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// BM25 parameters (Robertson and Zaragoza's usual values), and the weight
// of a tool's name against its description.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	nameWeight = 3
)

// index is a BM25 index of a view's tools over their exported names,
// descriptions and argument names and descriptions. It is built once per
// view and read concurrently.
type index struct {
	docs  []doc
	df    map[string]int // documents holding each term
	avgdl float64
}

type doc struct {
	e   *Entry
	tf  map[string]int
	len int
}

func newIndex(entries []*Entry) *index {
	ix := &index{df: map[string]int{}}
	total := 0
	for _, e := range entries {
		if !e.Real.ModelVisible() {
			continue // an MCP Apps tool for its app only: search never finds it (docs/mcp.md "MCP Apps")
		}
		d := doc{e: e, tf: map[string]int{}}
		add := func(text string, weight int) {
			for _, t := range tokens(text) {
				d.tf[t] += weight
				d.len += weight
			}
		}
		add(e.Exported.Name, nameWeight)
		add(e.Exported.Title, 1)
		add(e.Exported.Description, 1)
		if props, ok := e.Exported.InputSchema["properties"].(map[string]any); ok {
			for name, p := range props {
				add(name, 1)
				if pm, ok := p.(map[string]any); ok {
					desc, _ := pm["description"].(string)
					add(desc, 1)
				}
			}
		}
		for t := range d.tf {
			ix.df[t]++
		}
		total += d.len
		ix.docs = append(ix.docs, d)
	}
	if len(ix.docs) > 0 {
		ix.avgdl = float64(total) / float64(len(ix.docs))
	}
	return ix
}

// search returns up to limit entries that keep accepts, best first; an
// entry that shares no term with the query is not returned.
func (ix *index) search(query string, limit int, keep func(*Entry) bool) []*Entry {
	q := slices.Compact(slices.Sorted(slices.Values(tokens(query)))) // each term once
	type hit struct {
		e     *Entry
		score float64
	}
	var hits []hit
	n := float64(len(ix.docs))
	for _, d := range ix.docs {
		score := 0.0
		for _, t := range q {
			tf := float64(d.tf[t])
			if tf == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.len)/ix.avgdl))
		}
		if score > 0 && keep(d.e) {
			hits = append(hits, hit{d.e, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].e.Exported.Name < hits[j].e.Exported.Name
	})
	out := make([]*Entry, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, h.e)
	}
	return out
}

// stopwords carry no meaning in a tool search.
var stopwords = map[string]bool{"a": true, "an": true, "and": true, "the": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "or": true, "is": true, "by": true, "with": true, "from": true, "it": true, "this": true, "that": true, "be": true}

// tokens splits text into lower-case terms: at every character that is
// not a letter or digit (snake_case, kebab-case, slashes, dots, spaces)
// and at camelCase humps (getHTTPResponse → get http response), with a
// plural s dropped, stopwords left out.
func tokens(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		t := strings.ToLower(string(cur))
		cur = cur[:0]
		if len(t) > 3 && strings.HasSuffix(t, "s") && !strings.HasSuffix(t, "ss") {
			t = t[:len(t)-1]
		}
		if !stopwords[t] {
			out = append(out, t)
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if i > 0 && len(cur) > 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// Index is the tool search of discovery: search over a list of tools as
// they are, for measuring it (bench/context) on catalogues that are no
// registry.
type Index struct{ ix *index }

// NewIndex indexes tools exactly as a view in search mode indexes its
// exported tools.
func NewIndex(tools []*toolrouter.Tool) *Index {
	entries := make([]*Entry, len(tools))
	for i, t := range tools {
		entries[i] = &Entry{Exported: t, Real: t}
	}
	return &Index{newIndex(entries)}
}

// Search returns up to limit tools, best first, as search_tools ranks them.
func (x *Index) Search(query string, limit int) []*toolrouter.Tool {
	found := x.ix.search(query, limit, func(*Entry) bool { return true })
	out := make([]*toolrouter.Tool, len(found))
	for i, e := range found {
		out[i] = e.Real
	}
	return out
}
