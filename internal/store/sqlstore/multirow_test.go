package sqlstore_test

import (
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
)

func TestMultiRow(t *testing.T) {
	for _, c := range []struct {
		q    string
		n    int
		want string
	}{
		{`INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT (a) DO NOTHING`, 3,
			`INSERT INTO t (a, b) VALUES (?, ?), (?, ?), (?, ?) ON CONFLICT (a) DO NOTHING`},
		{`INSERT INTO t (a, b, c) VALUES ($1, COALESCE($3::timestamptz, now()), $2)`, 2,
			`INSERT INTO t (a, b, c) VALUES ($1, COALESCE($3::timestamptz, now()), $2), ($4, COALESCE($6::timestamptz, now()), $5)`},
		{`INSERT INTO t (a) VALUES ($1)`, 1, `INSERT INTO t (a) VALUES ($1)`},
	} {
		if got := sqlstore.MultiRow(c.q, c.n); got != c.want {
			t.Errorf("MultiRow(%q, %d)\n got %q\nwant %q", c.q, c.n, got, c.want)
		}
	}
	for n, want := range map[int]int{1: 1, 3: 1, 4: 4, 15: 4, 16: 16, 63: 16, 64: 64, 500: 64} {
		if got := sqlstore.RowChunk(n); got != want {
			t.Errorf("RowChunk(%d) = %d, want %d", n, got, want)
		}
	}
}
