package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// migrationFiles holds the schema of each SQL store, one file per version:
// migrations/<dialect>/NNNN_what.sql. A version, once released, never
// changes; a schema change is a new file.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// migration is one versioned schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns a dialect's migrations in version order. The files are
// compiled in, so a malformed set is a programming error and panics (the
// contract tests open every store, so it never ships).
func migrations(dialect string) []migration {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		panic(fmt.Sprintf("store: migrations %s: %v", dir, err))
	}
	var ms []migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v < 1 || !strings.HasSuffix(e.Name(), ".sql") {
			panic(fmt.Sprintf("store: migration %s/%s: want NNNN_name.sql", dir, e.Name()))
		}
		b, err := migrationFiles.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			panic(fmt.Sprintf("store: migration %s/%s: %v", dir, e.Name(), err))
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			panic(fmt.Sprintf("store: migrations %s: %s should be version %d", dir, m.name, i+1))
		}
	}
	return ms
}
