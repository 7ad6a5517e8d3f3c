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
		{`INSERT INTO t (a, b) VALUES (?, COALESCE(?, now()))`, 2,
			`INSERT INTO t (a, b) VALUES (?, COALESCE(?, now())), (?, COALESCE(?, now()))`},
		{`INSERT INTO t (a) VALUES (?)`, 1, `INSERT INTO t (a) VALUES (?)`},
	} {
		if got := sqlstore.MultiRow(c.q, c.n); got != c.want {
			t.Errorf("MultiRow(%q, %d)\n got %q\nwant %q", c.q, c.n, got, c.want)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MultiRow of a $1 tuple did not panic")
			}
		}()
		sqlstore.MultiRow(`INSERT INTO t (a) VALUES ($1)`, 2)
	}()
	for n, want := range map[int]int{1: 1, 3: 1, 4: 4, 15: 4, 16: 16, 63: 16, 64: 64, 500: 64} {
		if got := sqlstore.RowChunk(n); got != want {
			t.Errorf("RowChunk(%d) = %d, want %d", n, got, want)
		}
	}
}
