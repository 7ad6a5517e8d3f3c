package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	sqlitedriver "modernc.org/sqlite"
)

const (
	// checkpointEvery is how often, at most, the checkpointer copies the
	// log into the database file while the group commit writes: besides
	// durable commits, the bound on what an OS crash can take of the
	// group commits (docs/operations.md "Storage and durability"), and on
	// the pages one checkpoint copies (its burst of CPU).
	checkpointEvery = 100 * time.Millisecond
	// walLimit is the log's bound, in pages (4 KiB each). Once the group
	// commit wrote that many pages to the log since it last started again,
	// it checkpoints what is left itself, between two of its commits, so
	// that its next commit starts the log again from its beginning: the
	// checkpointer runs beside the commits and so, while they keep coming
	// closer together than a pass takes, never finds the log all copied.
	// What is left for the group commit is what it wrote since the
	// checkpointer's last pass began. The log then holds at most walLimit
	// pages and one commit's (TestWALBoundWithoutCheckpointer). The
	// store's other connections, which write little (sequence blocks,
	// runs, approvals, keys), keep SQLite's own checkpoint at the same
	// bound (PRAGMA wal_autocheckpoint: a connection that commits and
	// leaves that many pages in the log checkpoints at once).
	walLimit = 8000
)

// checkpointer copies the log (the -wal file) into the database file on a
// connection of its own, beside the group commit instead of inside it
// (issue 37): with SQLite's automatic checkpoint, one group commit in
// ~200 copied the 32 MB log and fsynced it (~20 ms of CPU, 0.2-0.5 s of
// wall time; BenchmarkCommitTail), and every write waited for (an
// Idempotency-Key's answer, a read's flush) waited for it too. PASSIVE
// checkpoints run beside writers in WAL mode: they take no lock a writer
// or a reader waits for, and copy only what no reader still needs.
type checkpointer struct {
	kick chan struct{} // a commit happened since the last checkpoint
	stop chan struct{}
	once sync.Once // closes stop
	done chan struct{}
	// mu is held by each checkpoint of this process, so that the group
	// commit's waits for a pass of the checkpointer in flight instead of
	// finding the log's checkpoint lock taken.
	mu sync.Mutex
	// started and ended count the group commits begun and ended;
	// copiedAt is the value of both when a pass of the checkpointer copied
	// all of the log with no commit under way (-1 before any): the next
	// commit starts the log again.
	started, ended, copiedAt atomic.Int64
	// passes counts the checkpointer's checkpoints, catchUps the group
	// commit's; tests read them.
	passes, catchUps atomic.Int64
	// err is the last error of a checkpoint, nil after one succeeded.
	err atomic.Pointer[error]
	// passed, when a test gives one, hears of each pass.
	passed chan struct{}
}

// startCheckpointer starts the checkpointer of s on a connection of its
// own, which it keeps until stopCheckpointer: a pass after a commit, at
// most one every every; passed, when not nil, hears of each.
func (s *Store) startCheckpointer(ctx context.Context, every time.Duration, passed chan struct{}) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite checkpointer: %w", err)
	}
	s.ckpt = &checkpointer{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), passed: passed}
	s.ckpt.copiedAt.Store(-1)
	if sqliteAutoCheckpoint {
		close(s.ckpt.done)
		return c.Close()
	}
	go s.ckpt.loop(c, every)
	return nil
}

// stopCheckpointer stops the checkpointer and gives its connection back
// (once: later calls only wait).
func (s *Store) stopCheckpointer() {
	s.ckpt.once.Do(func() { close(s.ckpt.stop) })
	<-s.ckpt.done
}

// loop checkpoints after a commit, at most once every every. A failed
// pass is tried again after the next commit; until one succeeds, the
// group commit's own checkpoints (afterCommit) bound the log.
func (k *checkpointer) loop(c *sql.Conn, every time.Duration) {
	defer close(k.done)
	defer c.Close()
	t := time.NewTimer(every)
	t.Stop()
	for {
		select {
		case <-k.kick:
		case <-k.stop:
			return
		}
		begun := k.started.Load()
		idle := k.ended.Load() == begun
		all, err := k.checkpoint(context.Background(), c)
		if err != nil {
			k.err.Store(&err)
		} else {
			k.err.Store(nil)
		}
		if all && idle && k.started.Load() == begun {
			k.copiedAt.Store(begun)
		}
		k.passes.Add(1)
		if k.passed != nil {
			select {
			case k.passed <- struct{}{}:
			case <-k.stop:
				return
			}
		}
		if !all || !idle {
			// Commits came during the pass: the next begins at the next
			// commit, so that the group commit's catch-up stays short.
			continue
		}
		t.Reset(every)
		select {
		case <-t.C:
		case <-k.stop:
			return
		}
	}
}

// checkpoint copies what it can of the log into the database file
// (PASSIVE), fsyncing the log before and the file after, and says whether
// it copied all of the log as it was when it began.
func (k *checkpointer) checkpoint(ctx context.Context, c *sql.Conn) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var busy, log, done int64
	if err := c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		return false, fmt.Errorf("sqlite checkpoint: %w", err)
	}
	return busy == 0 && done == log, nil
}

// walWriter is the group commit's count of the pages it wrote to the log
// since the log last started again, and in all (only its goroutine uses
// it); at limit pages it checkpoints (walLimit; a benchmark that counts
// the log's pages raises it).
type walWriter struct {
	pages, written, limit int64
}

// beforeCommit runs before each group commit begins, and the function it
// returns once the commit ended, committed or not: when the
// checkpointer copied all of the log since the last one, this commit
// starts the log again (unless a reader still reads from it), and the
// count of what the commits left in it starts again too.
func (s *Store) beforeCommit() (ended func()) {
	n := s.ckpt.started.Load()
	if s.ckpt.copiedAt.Load() == n {
		s.wal.pages = 0
	}
	s.ckpt.started.Store(n + 1)
	return func() { s.ckpt.ended.Add(1) }
}

// afterCommit runs after each group commit on its connection c: it wakes
// the checkpointer and, once the commits wrote walLimit pages to the log
// since it last started again, checkpoints the rest of the log itself,
// so that the next commit starts it again (see walLimit). An error is
// kept for Err: what was committed stays committed.
func (s *Store) afterCommit(ctx context.Context, c *sql.Conn) {
	if sqliteAutoCheckpoint {
		return
	}
	select {
	case s.ckpt.kick <- struct{}{}:
	default:
	}
	n, err := pagesWritten(ctx, c)
	if err != nil {
		s.ckpt.err.Store(&err)
		return
	}
	s.wal.written += n
	if s.wal.pages += n; s.wal.pages < s.wal.limit {
		return
	}
	s.ckpt.catchUps.Add(1)
	all, err := s.ckpt.checkpoint(ctx, c)
	if err != nil {
		s.ckpt.err.Store(&err)
		return
	}
	if all {
		s.wal.pages = 0
	}
	// Else a reader still needs what is left (it keeps the log from
	// starting again, as it does SQLite's own checkpoint): tried again
	// after the next commit.
}

// pagesWritten is how many pages c wrote since the last call
// (SQLITE_DBSTATUS_CACHE_WRITE, then reset): in WAL mode, the frames its
// commits appended to the log.
func pagesWritten(ctx context.Context, c *sql.Conn) (int64, error) {
	var n int
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	err := c.Raw(func(dc any) error {
		st, ok := dc.(sqlitedriver.DBStatus)
		if !ok {
			return errors.New("driver connection has no DBStatus")
		}
		var err error
		n, _, err = st.Status(sqlitedriver.DBStatusCacheWrite, true)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite log pages: %w", err)
	}
	return int64(n), nil
}
