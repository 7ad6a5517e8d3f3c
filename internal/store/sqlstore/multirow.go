package sqlstore

import "strings"

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
// times. Its placeholders must be ? (SQLite, the one user): numbered $k
// placeholders would need renumbering, so a tuple with $ panics.
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
	if strings.Contains(tuple, "$") {
		panic("sqlstore.MultiRow: $ placeholders in " + q)
	}
	return q[:open] + strings.Repeat(tuple+", ", n-1) + tuple + q[end+1:]
}
