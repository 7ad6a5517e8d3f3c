// Package suggest finds the known name closest to a misspelt one, for the
// "did you mean" of an error: an unknown setting, tool or provider.
package suggest

// Closest returns the candidate nearest to name in edit distance
// (Levenshtein, with a swap of two adjacent characters counting as one
// edit) when it is close enough to be the name meant: at most one edit in
// a name of up to 5 characters, two up to 11, three beyond, and fewer
// edits than the candidate's length (no name is "close" to a one-letter
// one). Ties go to the candidate first in byte order, so the answer does
// not depend on the candidates' order. ok is false when none is close, or
// name itself is a candidate.
func Closest(name string, candidates []string) (best string, ok bool) {
	limit := maxEdits(len(name))
	bestD := limit + 1
	for _, c := range candidates {
		if c == name {
			return "", false
		}
		if abs(len(c)-len(name)) > limit {
			continue // at least that many edits: not close, and not worth the distance's cost
		}
		d := distance(name, c)
		if d >= len(c) || d > bestD || (d == bestD && c >= best) {
			continue
		}
		best, bestD = c, d
	}
	if bestD > limit {
		return "", false
	}
	return best, true
}

func maxEdits(n int) int {
	switch {
	case n <= 5:
		return 1
	case n <= 11:
		return 2
	}
	return 3
}

// distance is the optimal string alignment distance of a and b, by bytes.
func distance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		// Names are short; a huge one is nobody's typo, and its cost is
		// quadratic.
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
