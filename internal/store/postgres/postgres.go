// Package postgres is the store.Store that replicas share
// (TOOLROUTER_STORE=postgres://…) on pgx.
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// migrationFiles holds the schema, one file per version (see
// sqlstore.Migrations).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the store that several replicas share: sequences, claims and
// sweeps are single atomic statements (or one implicit transaction), so any
// number of processes may use one database at once.
type Store struct {
	pool *pgxpool.Pool
	w    *writebehind.Writer
	seq  *sequencer // groups NextSequences calls (sequences.go)
	// Now, when set (a test's clock), replaces the server's clock for key
	// expiry; it is also the end time of interrupted runs (default
	// time.Now). Set it before the store is used.
	Now func() time.Time
	// conn is set by OpenLazy: how far connecting got (lazy.go).
	conn *connecting
}

const (
	// pgMigrationLock is the pg_advisory_lock key held while migrating, so
	// replicas starting together apply each migration once ("toolrout").
	pgMigrationLock int64 = 0x746f6f6c726f7574

	// pgDefaultMaxConns is the pool size when the URL sets no
	// pool_max_conns: enough for a replica's concurrent requests without
	// letting a few replicas exhaust the server's max_connections (100).
	pgDefaultMaxConns = 10

	// pgDefaultConnectTimeout bounds a connection attempt when the URL sets
	// no connect_timeout, so an unreachable server fails /readyz and start
	// quickly instead of after the kernel's TCP timeout.
	pgDefaultConnectTimeout = 10 * time.Second

	// pgWriteQueue bounds the writes waiting for the group commit,
	// pgWriteBatch one commit, pgCommitTimeout how long it may take.
	pgWriteQueue    = 4096
	pgWriteBatch    = 512
	pgCommitTimeout = 30 * time.Second
	// pgWriteLinger is how long a group commit nobody waits for waits for
	// more writes (writebehind.Writer.Linger), as on SQLite: at a moderate
	// rate each route's result was a commit, a WAL flush, of its own
	// (BenchmarkWALPerRoute: 1.78 commits per route at 1,000 routes/s,
	// 1.1 with it). Nothing waits for it: a route answers before its
	// commit, a keyed answer's commit is waited for (never delayed), and
	// a read of this replica's store flushes the queue first.
	pgWriteLinger = 10 * time.Millisecond
)

// Open connects to the database of a postgres:// or postgresql://
// URL (any libpq URL or keyword/value string pgx accepts, plus pgxpool's
// pool_* settings such as pool_max_conns, default 10) and applies the
// pending migrations under an advisory lock. Behind a transaction-mode
// pooler (PgBouncer) add default_query_exec_mode=exec to the URL: pgx
// caches prepared statements per connection by default.
func Open(ctx context.Context, url string) (*Store, error) { return open(ctx, url, false) }

// open is Open; lazy leaves the migrations to the caller (OpenLazy).
func open(ctx context.Context, url string, lazy bool) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx redacts the password from its parse errors.
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	if !connStringSets(url, "pool_max_conns") {
		cfg.MaxConns = pgDefaultMaxConns
	}
	if !connStringSets(url, "connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = pgDefaultConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "toolrouterd"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	p := &Store{pool: pool}
	if !lazy {
		if err := p.migrate(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	// The group commit: results and key answers queued together go in one
	// transaction, one round trip (docs/operations.md "Storage and durability").
	p.w = writebehind.New(p.commit, pgWriteQueue, pgWriteBatch)
	p.w.Linger = pgWriteLinger
	p.seq = newSequencer(p.allocateGroup)
	return p, nil
}

func (p *Store) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// keyNow is the instant key expiry is measured from: NULL, which the
// statements read as the server's now(), shared by every replica, unless
// Now is set.
func (p *Store) keyNow() *time.Time {
	if p.Now == nil {
		return nil
	}
	t := p.Now()
	return &t
}

// connStringSets reports whether a URL or keyword/value connection string
// sets the parameter name.
func connStringSets(conn, name string) bool {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		return err == nil && u.Query().Has(name)
	}
	for _, f := range strings.Fields(conn) {
		if k, _, ok := strings.Cut(f, "="); ok && strings.TrimSpace(k) == name {
			return true
		}
	}
	return false
}

// migrate applies the embedded migrations not yet in schema_migrations.
// The session-level advisory lock, held on one dedicated connection,
// serializes replicas that start at the same time.
func (p *Store) migrate(ctx context.Context) (err error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres store: connect: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, pgMigrationLock); err != nil {
		return fmt.Errorf("postgres migrate: lock: %w", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, pgMigrationLock); uerr != nil {
			// The lock belongs to the session: never hand it back to the
			// pool still held. Closing the connection releases it.
			conn.Conn().Close(uctx)
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("postgres migrate: %w", err)
	}
	rows, _ := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("postgres migrate: %w", err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[int(v)] = true
	}
	for _, m := range sqlstore.Migrations(migrationFiles, "migrations") {
		if applied[m.Version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, m.Version)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres migrate %s: %w", m.Name, err)
		}
	}
	return nil
}

// SaveResult implements store.Store: the result and its audit records
// are queued for the group commit as one write (waiting only while the
// queue is full).
func (p *Store) SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error {
	b, err := res.Encoded()
	if err != nil {
		return fmt.Errorf("postgres save result: %w", err)
	}
	save := resultWrite(resultRow{key: toolrouter.ScopedKey(res.Client, res.ToolCallID), plan: res.PlanID, body: string(b), at: p.keyNow()})
	if len(audit) == 0 {
		err = p.w.Add(ctx, save)
	} else {
		err = p.w.Add(ctx, appendAuditWrites(append(make([]writebehind.Write, 0, 1+2*len(audit)), save), audit)...)
	}
	if err != nil {
		return fmt.Errorf("postgres save result: %w", err)
	}
	return nil
}

// Flush implements store.Store.
func (p *Store) Flush(ctx context.Context) error { return p.w.Flush(ctx) }

// GetResult implements store.Store; it sees the results this store
// queued (it flushes them first).
func (p *Store) GetResult(ctx context.Context, id string) (*toolrouter.Result, error) {
	if err := p.w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("postgres get result: %w", err)
	}
	var body []byte
	err := p.pool.QueryRow(ctx, `SELECT body FROM route_results WHERE tool_call_id = $1`, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "tool call %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres get result: %w", err)
	}
	var res toolrouter.Result
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("postgres get result %q: %w", id, err)
	}
	return &res, nil
}

// ClaimKey implements store.Store. The three statements go in one batch, which
// PostgreSQL runs as one implicit transaction in one round trip: an expired
// claim is deleted, the key is inserted unless present (a concurrent insert
// of the same key waits for the other transaction, then yields), and the
// row is read. Expiry uses the server's clock, shared by every replica.
func (p *Store) ClaimKey(ctx context.Context, key, fingerprint string, ttl time.Duration) (toolrouter.Claim, error) {
	// The row read can vanish between the insert and the read (released or
	// expired and reclaimed meanwhile): then try again.
	for attempt := 0; ; attempt++ {
		c, found, err := p.claimOnce(ctx, key, fingerprint, ttl)
		if err != nil || found {
			return c, err
		}
		if attempt == 10 {
			return toolrouter.Claim{}, fmt.Errorf("postgres claim key: key %q keeps changing", key)
		}
	}
}

func (p *Store) claimOnce(ctx context.Context, key, fingerprint string, ttl time.Duration) (c toolrouter.Claim, found bool, err error) {
	now := p.keyNow()
	b := &pgx.Batch{}
	// An answer past its time is gone; a claim past its lease is not: its
	// request may have run (Abandoned).
	b.Queue(`DELETE FROM idempotency_keys WHERE key = $1 AND expires_at < COALESCE($2::timestamptz, now())
		AND (response IS NOT NULL OR expires_at < COALESCE($2::timestamptz, now()) - $3::bigint * interval '1 microsecond')`,
		key, now, toolrouter.AbandonedGrace.Microseconds())
	b.Queue(`INSERT INTO idempotency_keys (key, fingerprint, expires_at)
		VALUES ($1, $2, COALESCE($4::timestamptz, now()) + $3::bigint * interval '1 microsecond')
		ON CONFLICT (key) DO NOTHING RETURNING true`, key, fingerprint, ttl.Microseconds(), now)
	b.Queue(`SELECT fingerprint, response, expires_at < COALESCE($2::timestamptz, now()) FROM idempotency_keys WHERE key = $1`, key, now)
	br := p.pool.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); cerr != nil && err == nil {
			c, found, err = toolrouter.Claim{}, false, fmt.Errorf("postgres claim key: %w", cerr)
		}
	}()
	if _, err := br.Exec(); err != nil {
		return toolrouter.Claim{}, false, fmt.Errorf("postgres claim key: %w", err)
	}
	var inserted bool
	switch err := br.QueryRow().Scan(&inserted); {
	case err == nil:
		return toolrouter.Claim{State: toolrouter.Claimed}, true, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return toolrouter.Claim{}, false, fmt.Errorf("postgres claim key: %w", err)
	}
	var fp string
	var resp []byte
	var lapsed bool
	switch err := br.QueryRow().Scan(&fp, &resp, &lapsed); {
	case errors.Is(err, pgx.ErrNoRows):
		return toolrouter.Claim{}, false, nil
	case err != nil:
		return toolrouter.Claim{}, false, fmt.Errorf("postgres claim key: %w", err)
	case fp != fingerprint:
		return toolrouter.Claim{}, true, toolrouter.ErrKeyReused
	case resp == nil && lapsed:
		return toolrouter.Claim{State: toolrouter.Abandoned}, true, nil
	case resp == nil:
		return toolrouter.Claim{State: toolrouter.InProgress}, true, nil
	}
	return toolrouter.Claim{State: toolrouter.Answered, Response: resp}, true, nil
}

// CompleteKey implements store.Store: the answer joins the group commit,
// and CompleteKey returns once it (with every result queued before it) is
// committed.
func (p *Store) CompleteKey(ctx context.Context, key string, response []byte, ttl time.Duration) error {
	if err := p.w.AddWait(ctx, writebehind.Write{SQL: `UPDATE idempotency_keys SET response = $2,
		expires_at = COALESCE($4::timestamptz, now()) + $3::bigint * interval '1 microsecond' WHERE key = $1`,
		Args: []any{key, sqlstore.KeyResponse(response), ttl.Microseconds(), p.keyNow()}}); err != nil {
		return fmt.Errorf("postgres complete key: %w", err)
	}
	return nil
}

// RenewKey implements store.Store.
func (p *Store) RenewKey(ctx context.Context, key string, lease time.Duration) error {
	if _, err := p.pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = COALESCE($3::timestamptz, now()) + $2::bigint * interval '1 microsecond'
		WHERE key = $1 AND response IS NULL`, key, lease.Microseconds(), p.keyNow()); err != nil {
		return fmt.Errorf("postgres renew key: %w", err)
	}
	return nil
}

// ReleaseKey implements store.Store.
func (p *Store) ReleaseKey(ctx context.Context, key string) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE key = $1 AND response IS NULL`, key); err != nil {
		return fmt.Errorf("postgres release key: %w", err)
	}
	return nil
}

// PurgeExpiredKeys deletes every expired idempotency key and returns how
// many it deleted. ClaimKey already ignores them; this only reclaims space.
func (p *Store) PurgeExpiredKeys(ctx context.Context) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at < COALESCE($1::timestamptz, now())
		AND (response IS NOT NULL OR expires_at < COALESCE($1::timestamptz, now()) - $2::bigint * interval '1 microsecond')`,
		p.keyNow(), toolrouter.AbandonedGrace.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("postgres purge keys: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// SaveRun implements store.Store.
func (p *Store) SaveRun(ctx context.Context, run *toolrouter.Run) error {
	b, err := toolrouter.EncodeStored(run)
	if err != nil {
		return fmt.Errorf("postgres save run: %w", err)
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO runs (run_id, plan_id, status, owner, heartbeat_at, created_at, body, client)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (run_id) DO UPDATE SET plan_id = excluded.plan_id, status = excluded.status,
			owner = excluded.owner, heartbeat_at = excluded.heartbeat_at,
			created_at = excluded.created_at, body = excluded.body
		WHERE runs.status = 'running' OR excluded.status <> 'running'`,
		run.RunID, run.Context.PlanID, string(run.Status), run.Owner, run.HeartbeatAt, run.CreatedAt, string(b), run.Client)
	if err != nil {
		return fmt.Errorf("postgres save run: %w", err)
	}
	return nil
}

func scanPostgresRun(row pgx.CollectableRow) (*toolrouter.Run, error) {
	var body []byte
	var owner, client string
	var heartbeat time.Time
	if err := row.Scan(&body, &owner, &heartbeat, &client); err != nil {
		return nil, err
	}
	return sqlstore.DecodeRun(body, owner, client, heartbeat.UTC())
}

// GetRun implements store.Store.
func (p *Store) GetRun(ctx context.Context, id string) (*toolrouter.Run, error) {
	rows, _ := p.pool.Query(ctx, `SELECT body, owner, heartbeat_at, client FROM runs WHERE run_id = $1`, id)
	run, err := pgx.CollectExactlyOneRow(rows, scanPostgresRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "run %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres get run: %w", err)
	}
	return run, nil
}

// ListRuns implements store.Store.
func (p *Store) ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	if planID == "" {
		return p.listRuns(ctx, `TRUE`, limit)
	}
	return p.listRuns(ctx, `plan_id = $1`, limit, planID)
}

// listRuns lists the runs where holds (its placeholders numbered from $1
// for args), newest first, at most limit of them (all if limit <= 0).
func (p *Store) listRuns(ctx context.Context, where string, limit int, args ...any) ([]*toolrouter.Run, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	args = append(args, lim)
	rows, _ := p.pool.Query(ctx, `SELECT body, owner, heartbeat_at, client FROM runs WHERE `+where+`
		ORDER BY created_at DESC, run_id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	runs, err := pgx.CollectRows(rows, scanPostgresRun)
	if err != nil {
		return nil, fmt.Errorf("postgres list runs: %w", err)
	}
	if runs == nil {
		runs = []*toolrouter.Run{}
	}
	return runs, nil
}

// InterruptStale implements store.Store. One UPDATE … RETURNING takes the stale
// running runs (row locks make a concurrent sweeper wait, then skip rows no
// longer running), and the same transaction writes each interrupted body
// back: a run is interrupted once, by one sweeper.
func (p *Store) InterruptStale(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `UPDATE runs SET status = $1 WHERE status = $2 AND heartbeat_at < $3
			RETURNING run_id, body`, string(toolrouter.RunInterrupted), string(toolrouter.RunRunning), before)
		type stale struct {
			id   string
			body []byte
		}
		runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (stale, error) {
			var s stale
			return s, row.Scan(&s.id, &s.body)
		})
		if err != nil || len(runs) == 0 {
			return err
		}
		now := p.now()
		b := &pgx.Batch{}
		for _, r := range runs {
			var run toolrouter.Run
			if err := json.Unmarshal(r.body, &run); err != nil {
				return fmt.Errorf("run %q: %w", r.id, err)
			}
			run.Interrupt(now)
			body, err := json.Marshal(&run)
			if err != nil {
				return err
			}
			b.Queue(`UPDATE runs SET status = $2, body = $3 WHERE run_id = $1`, r.id, string(run.Status), string(body))
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		n = len(runs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres interrupt stale runs: %w", err)
	}
	return n, nil
}

// Ping implements store.Store.
func (p *Store) Ping(ctx context.Context) error {
	if err := p.conn.err(); err != nil {
		return err
	}
	if err := p.pool.Ping(ctx); err != nil {
		return err
	}
	return p.probeWrites(ctx)
}

// probeWrites, while the group commit fails (a full disk), commits one
// small write through it: its error while commits still fail, nil (and
// the writer healthy again) once they succeed, even with no traffic.
func (p *Store) probeWrites(ctx context.Context) error {
	if p.w.Err() == nil {
		return nil
	}
	err := p.w.AddWait(ctx, writebehind.Write{SQL: `INSERT INTO write_probe (id, at) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET at = excluded.at`, Args: []any{p.now()}, Kind: "probe"})
	if err != nil {
		return fmt.Errorf("postgres store: writes fail: %w", err)
	}
	return nil
}

// OnLostWrites makes f hear of each failed group commit of writes nobody
// waited for (results and audit records written behind), with how many of
// each kind were lost.
func (p *Store) OnLostWrites(f func(err error, lost map[string]int)) { p.w.SetOnError(f) }

// Close implements store.Store: it commits the queued writes first.
func (p *Store) Close() error {
	p.conn.stop()
	p.seq.close()
	p.w.Close()
	p.pool.Close()
	return nil
}
