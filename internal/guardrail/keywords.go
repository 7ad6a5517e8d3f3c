package guardrail

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// Redaction in one pass over the text (issue 32, finding 5): running each
// rule whose keyword the text holds over the whole text cost ~15 s of CPU
// a MiB of keyword-heavy text, ~200 regexps each scanning every byte. As
// gitleaks does, one Aho-Corasick scan finds every keyword occurrence,
// which tells the rules that apply (as before: a rule applies when one of
// its keywords occurs). The same scan finds the literals the rules' matches
// start with (after optional context, which only moves a match's start):
// such a rule is then tried, anchored, only where one of them occurs, on a
// window no longer than its longest match. The cost is the scan plus, per
// occurrence, a match attempt bounded by the rule's length. The rules that
// cannot be matched that way (unbounded matches, no literal start) run over
// the whole text, once each, as before.

// maxAnchored is the longest match (bytes) a rule tried at its keywords
// may have; longer or unbounded rules run over the whole text.
const maxAnchored = 4096

// anchoring is how a rule is tried at its keywords' occurrences.
type anchoring struct {
	re *regexp.Regexp // the rule from its keyword on, anchored at the start of the window
	// asserts are the empty-width assertions the rule makes just before
	// its literal, checked by hand (the window has no text before).
	asserts []syntax.Op
	// lits are the literals (ASCII, lower case) one of which starts every
	// match after the optional context.
	lits   []string
	maxLen int // bytes
}

// anchor analyses src: a rule that is a concatenation of optional lazy
// context (no captures), empty-width assertions, then elements whose every
// match starts with one of a few ASCII literals of 3 bytes or more, and
// whose matches are at most maxAnchored bytes long. nil when it is not.
func anchor(src string) *anchoring {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	i := 0
	for i < len(subs) && droppable(subs[i]) {
		i++
	}
	a := &anchoring{}
	for i < len(subs) && isAssert(subs[i].Op) {
		a.asserts = append(a.asserts, subs[i].Op)
		i++
	}
	if i == len(subs) {
		return nil
	}
	rest := subs[i:]
	lits, _, ok := leadLits(&syntax.Regexp{Op: syntax.OpConcat, Sub: rest})
	if !ok || len(lits) == 0 {
		return nil
	}
	for _, l := range lits {
		if len(l) < 3 || !isASCII(l) {
			return nil // too many places to try, or case variants the scan does not see
		}
		if l = lowerASCII(l); !slices.Contains(a.lits, l) {
			a.lits = append(a.lits, l)
		}
	}
	a.maxLen = maxLen(&syntax.Regexp{Op: syntax.OpConcat, Sub: rest})
	if a.maxLen < 0 || a.maxLen > maxAnchored {
		return nil
	}
	anchored := &syntax.Regexp{Op: syntax.OpConcat, Sub: append([]*syntax.Regexp{{Op: syntax.OpBeginText}}, rest...)}
	if a.re, err = regexp.Compile(anchored.String()); err != nil {
		return nil
	}
	if whole := regexp.MustCompile(src); whole.NumSubexp() != a.re.NumSubexp() {
		return nil
	}
	return a
}

// droppable is optional leading context: a lazy repetition, possibly
// empty, without captures. It only moves where a match starts (leftmost,
// then as short as it can be), never what the rest matches.
func droppable(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpQuest:
	case syntax.OpRepeat:
		if re.Min != 0 {
			return false
		}
	default:
		return false
	}
	return re.Flags&syntax.NonGreedy != 0 && !hasCapture(re)
}

func hasCapture(re *syntax.Regexp) bool {
	if re.Op == syntax.OpCapture {
		return true
	}
	return slices.ContainsFunc(re.Sub, hasCapture)
}

func isAssert(op syntax.Op) bool {
	return op == syntax.OpWordBoundary || op == syntax.OpNoWordBoundary || op == syntax.OpBeginText || op == syntax.OpBeginLine
}

// leadLits are literals one of which starts every match of re; exact
// when a match is exactly one of them.
func leadLits(re *syntax.Regexp) (lits []string, exact, ok bool) {
	const most = 64
	switch re.Op {
	case syntax.OpLiteral:
		return []string{string(re.Rune)}, true, true
	case syntax.OpCapture:
		return leadLits(re.Sub[0])
	case syntax.OpQuest:
		l, ex, ok := leadLits(re.Sub[0])
		if !ok || len(l) >= most {
			return nil, false, false
		}
		return append([]string{""}, l...), ex, true
	case syntax.OpCharClass:
		var out []string
		for j := 0; j+1 < len(re.Rune); j += 2 {
			for r := re.Rune[j]; r <= re.Rune[j+1]; r++ {
				if len(out) >= 4 {
					return nil, false, false
				}
				out = append(out, string(r))
			}
		}
		return out, true, len(out) > 0
	case syntax.OpAlternate:
		exact = true
		for _, s := range re.Sub {
			l, ex, ok := leadLits(s)
			if !ok || len(lits)+len(l) > most {
				return nil, false, false
			}
			lits, exact = append(lits, l...), exact && ex
		}
		return lits, exact, true
	case syntax.OpConcat:
		lits = []string{""}
		for _, s := range re.Sub {
			l, ex, ok := leadLits(s)
			if !ok || len(lits)*len(l) > most {
				return lits, false, lits[0] != "" || len(lits) > 1
			}
			var next []string
			for _, a := range lits {
				for _, b := range l {
					next = append(next, a+b)
				}
			}
			lits = next
			if !ex {
				return lits, false, true
			}
		}
		return lits, true, true
	}
	return nil, false, false
}

// maxLen is the most bytes a match of re can have (-1: unbounded).
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			w := utf8.RuneLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					w = max(w, utf8.RuneLen(f))
				}
			}
			n += w
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return max(utf8.RuneLen(re.Rune[len(re.Rune)-1]), 1) // the largest rune (classes are folded already)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpQuest, syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpRepeat:
		m := maxLen(re.Sub[0])
		if re.Max < 0 || m < 0 {
			return -1
		}
		return m * re.Max
	case syntax.OpConcat, syntax.OpAlternate:
		t := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				t += m
			} else {
				t = max(t, m)
			}
		}
		return t
	}
	return 0 // empty-width
}

// holds reports whether the assertions hold at i of s.
func (a *anchoring) holds(s string, i int) bool {
	for _, op := range a.asserts {
		var ok bool
		switch op {
		case syntax.OpBeginText:
			ok = i == 0
		case syntax.OpBeginLine:
			ok = i == 0 || s[i-1] == '\n'
		case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			before := i > 0 && isWordByte(s[i-1])
			after := i < len(s) && isWordByte(s[i])
			ok = (before != after) == (op == syntax.OpWordBoundary)
		}
		if !ok {
			return false
		}
	}
	return true
}

// isWordByte is \w as Go's \b sees it (ASCII).
func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerASCII lowers the ASCII letters of s, keeping its length (so
// offsets in it are offsets in s).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// keywordIndex finds the rules' keywords and leading literals in a text
// in one pass.
type keywordIndex struct {
	trie  *ahocorasick.Trie
	words []string
	// keywordOf are the rules (indexes) of which a word is a keyword,
	// leadOf those whose anchored matches may start with it.
	keywordOf, leadOf [][]int
}

func newKeywordIndex(rules []rule) *keywordIndex {
	k := &keywordIndex{}
	at := map[string]int{}
	word := func(w string) int {
		j, ok := at[w]
		if !ok {
			j = len(k.words)
			at[w] = j
			k.words = append(k.words, w)
			k.keywordOf, k.leadOf = append(k.keywordOf, nil), append(k.leadOf, nil)
		}
		return j
	}
	for i, r := range rules {
		for _, w := range r.Keywords {
			j := word(w)
			k.keywordOf[j] = append(k.keywordOf[j], i)
		}
		if r.anchor != nil {
			for _, w := range r.anchor.lits {
				j := word(w)
				k.leadOf[j] = append(k.leadOf[j], i)
			}
		}
	}
	k.trie = ahocorasick.NewTrieBuilder().AddStrings(k.words).Build()
	return k
}
