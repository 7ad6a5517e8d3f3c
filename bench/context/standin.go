package main

// STAND-IN. This file is a copy of the BM25 index of internal/vserver
// (branch vservers, internal/vserver/index.go: same parameters, same
// fields, same tokenizer), kept here only until that package is on this
// branch. To swap: export a search over a list of tools from
// internal/vserver (e.g. vserver.NewIndex(tools).Search(query, limit)),
// make it satisfy Searcher in main.go, replace newStandInBM25 there, and
// delete this file.

import (
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
)

const (
	bm25K1     = 1.2
	bm25B      = 0.75
	nameWeight = 3
)

type standInBM25 struct {
	docs  []bm25Doc
	df    map[string]int
	avgdl float64
}

type bm25Doc struct {
	t   *tool
	tf  map[string]int
	len int
}

func newStandInBM25(tools []*tool) *standInBM25 {
	ix := &standInBM25{df: map[string]int{}}
	total := 0
	for _, t := range tools {
		d := bm25Doc{t: t, tf: map[string]int{}}
		add := func(text string, weight int) {
			for _, term := range terms(text) {
				d.tf[term] += weight
				d.len += weight
			}
		}
		add(t.Name, nameWeight)
		add(t.Description, 1)
		if props, ok := t.InputSchema["properties"].(map[string]any); ok {
			for name, p := range props {
				add(name, 1)
				if pm, ok := p.(map[string]any); ok {
					desc, _ := pm["description"].(string)
					add(desc, 1)
				}
			}
		}
		for term := range d.tf {
			ix.df[term]++
		}
		total += d.len
		ix.docs = append(ix.docs, d)
	}
	if len(ix.docs) > 0 {
		ix.avgdl = float64(total) / float64(len(ix.docs))
	}
	return ix
}

// Search implements Searcher.
func (ix *standInBM25) Search(query string, limit int) []*tool {
	q := slices.Compact(slices.Sorted(slices.Values(terms(query))))
	type hit struct {
		t     *tool
		score float64
	}
	var hits []hit
	n := float64(len(ix.docs))
	for _, d := range ix.docs {
		score := 0.0
		for _, term := range q {
			tf := float64(d.tf[term])
			if tf == 0 {
				continue
			}
			df := float64(ix.df[term])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.len)/ix.avgdl))
		}
		if score > 0 {
			hits = append(hits, hit{d.t, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].t.Name < hits[j].t.Name
	})
	out := make([]*tool, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, h.t)
	}
	return out
}

var stopwords = map[string]bool{"a": true, "an": true, "and": true, "the": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "or": true, "is": true, "by": true, "with": true, "from": true, "it": true, "this": true, "that": true, "be": true}

func terms(text string) []string {
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
