// Package sqlstore holds what the SQL stores (store/sqlite and
// store/postgres) share: their versioned migrations, and how rows map to
// values and back. It imports no database driver.
package sqlstore

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the migrations in directory dir of files, one file
// per version, NNNN_what.sql, in version order. A version, once released,
// never changes; a schema change is a new file. Versions need not be
// consecutive (each area of the schema numbers its files in its own
// range: 0010-0019 storage and durability, 0020-0029 tenants, 0030-0039
// approvals), but each is used once. The files are compiled in
// (embed), so a malformed set is a programming error and panics (the
// contract suite opens every store, so it never ships).
func Migrations(files fs.FS, dir string) []Migration {
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		panic(fmt.Sprintf("sqlstore: migrations %s: %v", dir, err))
	}
	var ms []Migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v < 1 || !strings.HasSuffix(e.Name(), ".sql") {
			panic(fmt.Sprintf("sqlstore: migration %s/%s: want NNNN_name.sql", dir, e.Name()))
		}
		b, err := fs.ReadFile(files, path.Join(dir, e.Name()))
		if err != nil {
			panic(fmt.Sprintf("sqlstore: migration %s/%s: %v", dir, e.Name(), err))
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	// Versions are unique; they may skip numbers (work done in parallel
	// takes its own block of numbers).
	for i, m := range ms {
		if i > 0 && m.Version == ms[i-1].Version {
			panic(fmt.Sprintf("sqlstore: migrations %s: %s and %s have the same version", dir, ms[i-1].Name, m.Name))
		}
	}
	return ms
}
