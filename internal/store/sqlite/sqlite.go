// Package sqlite is the embedded default store.Store
// (TOOLROUTER_STORE=sqlite://PATH) on the pure-Go SQLite driver.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	sqlitedriver "modernc.org/sqlite" // pure-Go SQLite driver (no cgo), registered as "sqlite"
	sqlitelib "modernc.org/sqlite/lib"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// migrationFiles holds the schema, one file per version (see
// sqlstore.Migrations).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the embedded default store: one file, WAL mode, no setup.
// Several processes may share the file on one machine: every write is one
// statement or one BEGIN IMMEDIATE transaction, and writers wait for each
// other (busy_timeout) instead of failing.
//
// A route waits for no disk write (docs/operations.md "Storage and durability"):
// sequences come from memory, from blocks reserved by one durable commit
// (sequences.go), and results are written behind by the group commit
// (writebehind), which also carries the answers of Idempotency-Keys,
// waited for before the answer is sent.
//
// Every commit is durable (synchronous=FULL: the WAL is fsynced) but the
// group commit's, on its own connection with synchronous=NORMAL: what it
// commits survives the process (it is in the WAL, in the OS's page
// cache) but not an OS crash until the next fsync of the WAL (the next
// durable commit of any connection, or a checkpoint: the checkpointer's
// next pass, at most checkpointEvery after the commit and beside the
// commits, checkpoint.go). A group that holds a Durable write (an
// Idempotency-Key's answer) is committed with FULL.
type Store struct {
	db  *sql.DB
	w   *writebehind.Writer
	seq sequences
	// wc is the group commit's connection (synchronous=NORMAL), taken
	// from db when needed and kept; only the writer's goroutine uses it.
	wc *sql.Conn
	// stmts are the group commit's statements, prepared once.
	stmts map[stmtKey]*sql.Stmt
	// ckpt copies the log into the file beside the group commit; wal is
	// the group commit's count of what it left in the log.
	ckpt *checkpointer
	wal  walWriter
	// Now is the clock of key expiry and of the end of interrupted runs;
	// a test may set it before the store is used.
	Now func() time.Time
}

// stmtKey is a statement of the group commit: a write's SQL, its VALUES
// repeated n times.
type stmtKey struct {
	sql string
	n   int
}

// sqliteTime is how SQLite columns hold instants: UTC, fixed width, with
// nanoseconds, so that they compare and sort as text.
const sqliteTime = "2006-01-02T15:04:05.000000000Z"

func sqliteTimeOf(t time.Time) string { return t.UTC().Format(sqliteTime) }

func parseSQLiteTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: bad timestamp %q: %w", s, err)
	}
	return t.UTC(), nil
}

// Open opens (creating when missing) the database file at path and
// applies the pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite store: empty path")
	}
	q := url.Values{}
	// Writers wait up to busyTimeout for each other instead of failing.
	// No journal_mode here: WAL is switched on once, by wal.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	// The log is copied into the file (a checkpoint) by the checkpointer,
	// beside the group commit (checkpoint.go). These connections still
	// checkpoint in their own path once the log holds walLimit pages
	// (32 MB); the group commit's, at walLimit pages it wrote itself.
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walLimit))
	// The statement journal of a multi-row INSERT (the group commit's) in
	// memory, not in a temporary file written page by page.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s := &Store{db: db, Now: time.Now, wal: walWriter{limit: walLimit}}
	if err := wal(ctx, db, path, sleep); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.startCheckpointer(ctx, checkpointEvery, nil); err != nil {
		db.Close()
		return nil, err
	}
	s.w = writebehind.New(s.commit, writeQueue, writeBatch)
	s.w.Linger = writeLinger
	return s, nil
}

// busyTimeout is how long a statement waits for another connection's
// lock (PRAGMA busy_timeout), and how long Open retries switching the
// file to WAL.
const busyTimeout = 10 * time.Second

// wal switches the file at path to WAL mode, retrying while another
// connection holds a lock it needs. The mode is kept in the file: every
// connection opened later, of any process, is in WAL mode without asking.
//
// PRAGMA journal_mode=WAL on a file not yet in WAL mode opens a read
// transaction, then upgrades it to a write one to set the file header's
// version; SQLite calls the busy handler only when a transaction begins,
// not when one is upgraded, so busy_timeout does not apply and the upgrade
// fails at once with SQLITE_BUSY whenever another connection (another
// opener switching too, or migrating) holds the write lock. Nothing was
// changed then: trying again is safe, and a later try finds the file in
// WAL mode already, which needs no write.
//
// wait waits before each retry (sleep, but for tests).
func wal(ctx context.Context, db *sql.DB, path string, wait func(context.Context, time.Duration) error) error {
	deadline := time.Now().Add(busyTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("sqlite %s: journal mode is %q, not wal", path, mode)
			}
			return nil
		}
		var se *sqlitedriver.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlitelib.SQLITE_BUSY || !time.Now().Add(delay).Before(deadline) {
			return fmt.Errorf("sqlite %s: switch to WAL: %w", path, err)
		}
		if werr := wait(ctx, delay); werr != nil {
			return fmt.Errorf("sqlite %s: switch to WAL: %w", path, errors.Join(err, werr))
		}
	}
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// commit is the group commit: ws in one transaction on the writer's
// connection, durable only when a write of ws is Durable. The rows of each
// one-row INSERT go in multi-row statements (writebehind.Group), and
// every statement is prepared once per connection: parsing each write
// again, and one statement per row, were most of the commit's CPU.
func (s *Store) commit(ctx context.Context, ws []writebehind.Write) (err error) {
	durable := false
	for i := range ws {
		durable = durable || ws[i].Durable
	}
	c, err := s.writerConn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite group commit: %w", err)
	}
	defer func() {
		if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
			s.wc.Close() // the next commit takes another connection
			s.wc = nil
		}
	}()
	if durable {
		if _, err := c.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
			return fmt.Errorf("sqlite group commit: %w", err)
		}
		defer func() {
			if _, e := c.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); e != nil && err == nil {
				err = fmt.Errorf("sqlite group commit: %w", e)
			}
		}()
	}
	rows, others := writebehind.Group(ws)
	defer s.beforeCommit()()
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite group commit: %w", err)
	}
	defer tx.Rollback() // after Commit: a no-op
	var args []any
	for _, r := range rows {
		for left := r.Args; len(left) > 0; {
			n := sqlstore.RowChunk(len(left))
			args = args[:0]
			for _, a := range left[:n] {
				args = append(args, a...)
			}
			if err := s.exec(ctx, tx, r.SQL, n, args); err != nil {
				return err
			}
			left = left[n:]
		}
	}
	for _, w := range others {
		if err := s.exec(ctx, tx, w.SQL, 1, w.Args); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite group commit: %w", err)
	}
	s.afterCommit(ctx, c)
	return nil
}

// writerConn is the group commit's connection, with synchronous=NORMAL.
func (s *Store) writerConn(ctx context.Context) (*sql.Conn, error) {
	if s.wc != nil {
		return s.wc, nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	// The group commit checkpoints in its own path by its own count of
	// the pages it wrote (afterCommit), not SQLite's.
	auto := 0
	if sqliteAutoCheckpoint {
		auto = walLimit
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf(`PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = %d`, auto)); err != nil {
		c.Close()
		return nil, err
	}
	s.wc = c
	return c, nil
}

// closeWriterConn gives the writer's connection back to the pool as the
// others are (synchronous=FULL); the writer has stopped.
func (s *Store) closeWriterConn() error {
	if s.wc == nil {
		return nil
	}
	_, err := s.wc.ExecContext(context.Background(), fmt.Sprintf(`PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = %d`, walLimit))
	err = errors.Join(err, s.wc.Close())
	s.wc = nil
	return err
}

// exec runs q, its VALUES tuple repeated n times, in tx, prepared once
// (only the group commit's goroutine calls it).
func (s *Store) exec(ctx context.Context, tx *sql.Tx, q string, n int, args []any) error {
	k := stmtKey{q, n}
	st := s.stmts[k]
	if st == nil {
		var err error
		if st, err = s.db.PrepareContext(ctx, sqlstore.MultiRow(q, n)); err != nil {
			return fmt.Errorf("sqlite group commit: %w", err)
		}
		if s.stmts == nil {
			s.stmts = make(map[stmtKey]*sql.Stmt)
		}
		s.stmts[k] = st
	}
	if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("sqlite group commit: %w", err)
	}
	return nil
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in its own immediate transaction, so concurrent
// openers of one file apply each version exactly once.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("sqlite migrate: %w", err)
	}
	for _, m := range sqlstore.Migrations(migrationFiles, "migrations") {
		if err := s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil || n > 0 {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (?)`, m.Version)
			return err
		}); err != nil {
			return fmt.Errorf("sqlite migrate %s: %w", m.Name, err)
		}
	}
	return nil
}

// tx runs f in one BEGIN IMMEDIATE transaction (the DSN's _txlock), which
// takes the write lock up front: no reader-turned-writer ever fails with
// SQLITE_BUSY halfway through.
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// NextSequence implements store.Store from the plan's block (sequences.go).
func (s *Store) NextSequence(ctx context.Context, planID string) (int64, error) {
	return s.NextSequences(ctx, planID, 1)
}

const saveResultSQL = `INSERT INTO route_results (tool_call_id, plan_id, body, created_at)
	VALUES (?, ?, ?, ?)
	ON CONFLICT (tool_call_id) DO UPDATE SET plan_id = excluded.plan_id, body = excluded.body`

// SaveResult implements store.Store: the result and its audit records
// are queued for the group commit as one write (waiting only while the
// queue is full).
func (s *Store) SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error {
	b, err := res.Encoded()
	if err != nil {
		return fmt.Errorf("sqlite save result: %w", err)
	}
	key := toolrouter.ScopedKey(res.Client, res.ToolCallID)
	save := writebehind.Write{SQL: saveResultSQL, Row: true, Key: key, Kind: "result",
		Args: []any{key, res.PlanID, string(b), sqliteTimeOf(s.Now())}}
	if len(audit) == 0 {
		err = s.w.Add(ctx, save)
	} else {
		err = s.w.Add(ctx, appendAuditWrites(append(make([]writebehind.Write, 0, 1+2*len(audit)), save), audit)...)
	}
	if err != nil {
		return fmt.Errorf("sqlite save result: %w", err)
	}
	return nil
}

// Flush waits until every write queued before it is committed.
func (s *Store) Flush(ctx context.Context) error { return s.w.Flush(ctx) }

// GetResult implements store.Store; it sees the results this store
// queued (it flushes them first).
func (s *Store) GetResult(ctx context.Context, id string) (*toolrouter.Result, error) {
	if err := s.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sqlite get result: %w", err)
	}
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body FROM route_results WHERE tool_call_id = ?`, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "tool call %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite get result: %w", err)
	}
	var res toolrouter.Result
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		return nil, fmt.Errorf("sqlite get result %q: %w", id, err)
	}
	return &res, nil
}

// ClaimKey implements store.Store in one immediate transaction: an expired claim
// is deleted, then the key is inserted unless present, else read.
func (s *Store) ClaimKey(ctx context.Context, key, fingerprint string, ttl time.Duration) (toolrouter.Claim, error) {
	var c toolrouter.Claim
	err := s.tx(ctx, func(tx *sql.Tx) error {
		now := s.Now()
		// An answer past its time is gone; a claim past its lease is not:
		// its request may have run (Abandoned).
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE key = ? AND expires_at < ?
			AND (response IS NOT NULL OR expires_at < ?)`,
			key, sqliteTimeOf(now), sqliteTimeOf(now.Add(-toolrouter.AbandonedGrace))); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (key, fingerprint, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO NOTHING`, key, fingerprint, sqliteTimeOf(now.Add(ttl)))
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n == 1 {
			c = toolrouter.Claim{State: toolrouter.Claimed}
			return err
		}
		var fp, expires string
		var resp []byte
		if err := tx.QueryRowContext(ctx, `SELECT fingerprint, response, expires_at FROM idempotency_keys WHERE key = ?`,
			key).Scan(&fp, &resp, &expires); err != nil {
			return err
		}
		switch {
		case fp != fingerprint:
			return toolrouter.ErrKeyReused
		case resp == nil && expires < sqliteTimeOf(now):
			c = toolrouter.Claim{State: toolrouter.Abandoned}
		case resp == nil:
			c = toolrouter.Claim{State: toolrouter.InProgress}
		default:
			c = toolrouter.Claim{State: toolrouter.Answered, Response: resp}
		}
		return nil
	})
	if err == toolrouter.ErrKeyReused {
		return toolrouter.Claim{}, err
	}
	if err != nil {
		return toolrouter.Claim{}, fmt.Errorf("sqlite claim key: %w", err)
	}
	return c, nil
}

// CompleteKey implements store.Store: the answer joins the group commit,
// and CompleteKey returns once it (with every result queued before it) is
// durably committed (synchronous=FULL, see Store).
func (s *Store) CompleteKey(ctx context.Context, key string, response []byte, ttl time.Duration) error {
	if err := s.w.AddWait(ctx, writebehind.Write{Durable: true, SQL: `UPDATE idempotency_keys SET response = ?, expires_at = ? WHERE key = ?`,
		Args: []any{sqlstore.KeyResponse(response), sqliteTimeOf(s.Now().Add(ttl)), key}}); err != nil {
		return fmt.Errorf("sqlite complete key: %w", err)
	}
	return nil
}

// RenewKey implements store.Store.
func (s *Store) RenewKey(ctx context.Context, key string, lease time.Duration) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE idempotency_keys SET expires_at = ? WHERE key = ? AND response IS NULL`,
		sqliteTimeOf(s.Now().Add(lease)), key); err != nil {
		return fmt.Errorf("sqlite renew key: %w", err)
	}
	return nil
}

// ReleaseKey implements store.Store.
func (s *Store) ReleaseKey(ctx context.Context, key string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE key = ? AND response IS NULL`, key); err != nil {
		return fmt.Errorf("sqlite release key: %w", err)
	}
	return nil
}

// PurgeExpiredKeys deletes every expired idempotency key and returns how
// many it deleted. ClaimKey already ignores them; this only reclaims space.
func (s *Store) PurgeExpiredKeys(ctx context.Context) (int, error) {
	now := s.Now()
	return s.execCount(ctx, "purge keys", `DELETE FROM idempotency_keys WHERE expires_at < ? AND (response IS NOT NULL OR expires_at < ?)`,
		sqliteTimeOf(now), sqliteTimeOf(now.Add(-toolrouter.AbandonedGrace)))
}

// execCount runs query and returns how many rows it changed; what names
// the operation in its error.
func (s *Store) execCount(ctx context.Context, what, query string, args ...any) (int, error) {
	r, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlite %s: %w", what, err)
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// SaveRun implements store.Store.
func (s *Store) SaveRun(ctx context.Context, run *toolrouter.Run) error {
	b, err := toolrouter.EncodeStored(run)
	if err != nil {
		return fmt.Errorf("sqlite save run: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO runs (run_id, plan_id, status, owner, heartbeat_at, created_at, body, client)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id) DO UPDATE SET plan_id = excluded.plan_id, status = excluded.status,
			owner = excluded.owner, heartbeat_at = excluded.heartbeat_at,
			created_at = excluded.created_at, body = excluded.body
		WHERE runs.status = 'running' OR excluded.status <> 'running'`,
		run.RunID, run.Context.PlanID, string(run.Status), run.Owner,
		sqliteTimeOf(run.HeartbeatAt), sqliteTimeOf(run.CreatedAt), string(b), run.Client)
	if err != nil {
		return fmt.Errorf("sqlite save run: %w", err)
	}
	return nil
}

func scanSQLiteRun(sc interface{ Scan(...any) error }) (*toolrouter.Run, error) {
	var body, owner, hb, client string
	if err := sc.Scan(&body, &owner, &hb, &client); err != nil {
		return nil, err
	}
	heartbeat, err := parseSQLiteTime(hb)
	if err != nil {
		return nil, err
	}
	return sqlstore.DecodeRun([]byte(body), owner, client, heartbeat)
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, id string) (*toolrouter.Run, error) {
	run, err := scanSQLiteRun(s.db.QueryRowContext(ctx,
		`SELECT body, owner, heartbeat_at, client FROM runs WHERE run_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "run %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite get run: %w", err)
	}
	return run, nil
}

// ListRuns implements store.Store.
func (s *Store) ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	if planID == "" {
		return s.listRuns(ctx, `1`, limit)
	}
	return s.listRuns(ctx, `plan_id = ?`, limit, planID)
}

// listRuns lists the runs where holds (its arguments args), newest first,
// at most limit of them (all if limit <= 0).
func (s *Store) listRuns(ctx context.Context, where string, limit int, args ...any) ([]*toolrouter.Run, error) {
	if limit <= 0 {
		limit = -1 // no limit
	}
	rows, err := s.db.QueryContext(ctx, `SELECT body, owner, heartbeat_at, client FROM runs WHERE `+where+`
		ORDER BY created_at DESC, run_id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite list runs: %w", err)
	}
	defer rows.Close()
	out := []*toolrouter.Run{}
	for rows.Next() {
		run, err := scanSQLiteRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite list runs: %w", err)
		}
		out = append(out, run)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite list runs: %w", err)
	}
	return out, nil
}

// InterruptStale implements store.Store in one immediate transaction, so a run is
// interrupted once even when several processes sweep at the same time.
func (s *Store) InterruptStale(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, `SELECT run_id, body FROM runs WHERE status = ? AND heartbeat_at < ?`,
			string(toolrouter.RunRunning), sqliteTimeOf(before))
		if err != nil {
			return err
		}
		type stale struct{ id, body string }
		var runs []stale
		for rows.Next() {
			var r stale
			if err := rows.Scan(&r.id, &r.body); err != nil {
				rows.Close()
				return err
			}
			runs = append(runs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := s.Now()
		for _, r := range runs {
			var run toolrouter.Run
			if err := json.Unmarshal([]byte(r.body), &run); err != nil {
				return fmt.Errorf("run %q: %w", r.id, err)
			}
			run.Interrupt(now)
			b, err := json.Marshal(&run)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, body = ? WHERE run_id = ?`,
				string(run.Status), string(b), r.id); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite interrupt stale runs: %w", err)
	}
	return n, nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return err
	}
	return s.probeWrites(ctx)
}

// probeWrites, while the group commit fails (a full disk), commits one
// small write through it: its error while commits still fail, nil (and
// the writer healthy again) once they succeed, even with no traffic.
func (s *Store) probeWrites(ctx context.Context) error {
	if s.w.Err() == nil {
		return nil
	}
	err := s.w.AddWait(ctx, writebehind.Write{SQL: `INSERT INTO write_probe (id, at) VALUES (1, ?)
		ON CONFLICT (id) DO UPDATE SET at = excluded.at`, Args: []any{sqliteTimeOf(s.Now())}, Kind: "probe"})
	if err != nil {
		return fmt.Errorf("sqlite store: writes fail: %w", err)
	}
	return nil
}

// OnLostWrites makes f hear of each failed group commit of writes nobody
// waited for (results and audit records written behind), with how many of
// each kind were lost.
func (s *Store) OnLostWrites(f func(err error, lost map[string]int)) { s.w.SetOnError(f) }

// Close implements store.Store: it commits the queued writes, gives back
// the unused sequences of its blocks (sequences.go), then closes the file.
func (s *Store) Close() error {
	s.w.Close()
	s.stopCheckpointer()
	err := errors.Join(s.closeWriterConn(), s.giveBack())
	return errors.Join(err, s.db.Close())
}
