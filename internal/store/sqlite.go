package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // pure-Go SQLite driver (no cgo), registered as "sqlite"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// SQLite is the embedded default store: one file, WAL mode, no setup.
type SQLite struct {
	db *sql.DB
}

var _ Store = (*SQLite)(nil)

// sqliteMigrations are applied in order at start; each runs once.
var sqliteMigrations = []string{
	`CREATE TABLE IF NOT EXISTS plan_sequences (
		plan_id TEXT PRIMARY KEY,
		next    INTEGER NOT NULL
	)`,
}

// OpenSQLite opens (creating when missing) the database file at path.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite store: empty path")
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s := &SQLite{db: db}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *SQLite) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("sqlite migrate: %w", err)
	}
	for i, m := range sqliteMigrations {
		version := i + 1
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlite migrate %d: %w", version, err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlite migrate %d: %w", version, err)
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, m); err != nil {
				tx.Rollback()
				return fmt.Errorf("sqlite migrate %d: %w", version, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, version); err != nil {
				tx.Rollback()
				return fmt.Errorf("sqlite migrate %d: %w", version, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlite migrate %d: %w", version, err)
		}
	}
	return nil
}

// NextSequence implements Store with one atomic upsert.
func (s *SQLite) NextSequence(ctx context.Context, planID string) (int64, error) {
	if planID == "" {
		return 0, toolrouter.Invalid("plan_id", "plan_id must be a non-empty string")
	}
	var seq int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO plan_sequences (plan_id, next) VALUES (?, 1)
		ON CONFLICT (plan_id) DO UPDATE SET next = next + 1
		RETURNING next - 1`, planID).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("sqlite next sequence: %w", err)
	}
	return seq, nil
}

// Ping implements Store.
func (s *SQLite) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close implements Store.
func (s *SQLite) Close() error { return s.db.Close() }

func sqlitePath(rest string) string {
	// sqlite://toolrouter.db → toolrouter.db; sqlite:///data/x.db → /data/x.db
	return strings.TrimSpace(rest)
}
