package sqlstore

import (
	"strconv"
	"strings"
)

// RowChunk is how many of n rows to insert in the next multi-row
// statement: the largest of a few fixed sizes that fits, so that a store
// prepares (and a driver caches) a handful of statements per INSERT
// rather than one per group size.
func RowChunk(n int) int {
	for _, c := range [...]int{64, 16, 4} {
		if n >= c {
			return c
		}
	}
	return 1
}

// MultiRow is the one-row INSERT q with its VALUES tuple repeated n
// times; $k placeholders (PostgreSQL) are renumbered so that row i uses
// $(k + i*m), m being the highest placeholder of the tuple. ? placeholders
// (SQLite) stay as they are.
func MultiRow(q string, n int) string {
	if n == 1 {
		return q
	}
	open := strings.Index(q, "VALUES (")
	if open < 0 {
		panic("sqlstore.MultiRow: no VALUES ( in " + q)
	}
	open += len("VALUES ")
	end, depth := open, 0
	for ; end < len(q); end++ {
		if q[end] == '(' {
			depth++
		} else if q[end] == ')' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	tuple := q[open : end+1]
	m := 0
	for _, p := range placeholders(tuple) {
		m = max(m, p.n)
	}
	var b strings.Builder
	b.WriteString(q[:open])
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		if m == 0 {
			b.WriteString(tuple)
			continue
		}
		at := 0
		for _, p := range placeholders(tuple) {
			b.WriteString(tuple[at:p.start])
			b.WriteString("$" + strconv.Itoa(p.n+i*m))
			at = p.end
		}
		b.WriteString(tuple[at:])
	}
	b.WriteString(q[end+1:])
	return b.String()
}

type placeholder struct{ start, end, n int }

// placeholders are the $k of s.
func placeholders(s string) []placeholder {
	var ps []placeholder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j > i+1 {
			n, _ := strconv.Atoi(s[i+1 : j])
			ps = append(ps, placeholder{i, j, n})
			i = j - 1
		}
	}
	return ps
}
