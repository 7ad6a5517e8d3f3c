package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// CreateTask implements store.Tasks.
func (s *Store) CreateTask(ctx context.Context, t *toolrouter.Task, beat time.Time) error {
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("sqlite create task: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO tasks (task_id, client, status, status_message, created_at, updated_at, heartbeat_at, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, t.TaskID, t.Client, string(t.Status), t.StatusMessage,
		sqliteTimeOf(t.CreatedAt), sqliteTimeOf(t.UpdatedAt), sqliteTimeOf(beat), string(body))
	if err != nil {
		return fmt.Errorf("sqlite create task: %w", err)
	}
	return nil
}

// GetTask implements store.Tasks.
func (s *Store) GetTask(ctx context.Context, id string) (*toolrouter.Task, error) {
	var (
		client, status, message, progress, updated, body string
		cancel                                           bool
	)
	err := s.db.QueryRowContext(ctx, `SELECT client, status, status_message, cancel_requested, progress, updated_at, body FROM tasks WHERE task_id = ?`, id).
		Scan(&client, &status, &message, &cancel, &progress, &updated, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "task %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite get task: %w", err)
	}
	u, err := parseSQLiteTime(updated)
	if err != nil {
		return nil, err
	}
	return sqlstore.TaskOf(body, client, status, message, progress, cancel, u)
}

// BeatTask implements store.Tasks.
func (s *Store) BeatTask(ctx context.Context, id string, beat time.Time, progress *toolrouter.TaskProgress, status toolrouter.TaskStatus, message string) (bool, bool, error) {
	p := sqlstore.ProgressText(progress)
	var cancel bool
	err := s.db.QueryRowContext(ctx, `UPDATE tasks SET heartbeat_at = ?,
		progress = CASE WHEN ? = '' THEN progress ELSE ? END,
		status = CASE WHEN ? = '' THEN status ELSE ? END,
		status_message = CASE WHEN ? = '' THEN status_message ELSE ? END,
		updated_at = CASE WHEN ? = '' AND ? = '' THEN updated_at ELSE ? END
		WHERE task_id = ? AND `+sqlstore.LiveTask+` RETURNING cancel_requested`,
		sqliteTimeOf(beat), p, p, string(status), string(status), string(status), message,
		p, string(status), sqliteTimeOf(beat), id).Scan(&cancel)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("sqlite beat task: %w", err)
	}
	return cancel, true, nil
}

// SaveTask implements store.Tasks.
func (s *Store) SaveTask(ctx context.Context, t *toolrouter.Task) (bool, error) {
	body, err := json.Marshal(t)
	if err != nil {
		return false, fmt.Errorf("sqlite save task: %w", err)
	}
	p := sqlstore.ProgressText(t.Progress)
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET status = ?, status_message = ?, progress = ?, updated_at = ?, body = ?
		WHERE task_id = ? AND `+sqlstore.LiveTask, string(t.Status), t.StatusMessage, p, sqliteTimeOf(t.UpdatedAt), string(body), t.TaskID)
	if err != nil {
		return false, fmt.Errorf("sqlite save task: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RequestTaskCancel implements store.Tasks.
func (s *Store) RequestTaskCancel(ctx context.Context, id string, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET cancel_requested = 1, updated_at = ? WHERE task_id = ? AND `+sqlstore.LiveTask, sqliteTimeOf(now), id)
	if err != nil {
		return false, fmt.Errorf("sqlite cancel task: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// FailStaleTasks implements store.Tasks: the status columns change, the
// body keeps the task as created, and GetTask reads the columns over it.
func (s *Store) FailStaleTasks(ctx context.Context, before, now time.Time, reason string) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE tasks SET status = 'failed', status_message = ?, updated_at = ?
		WHERE status = 'working' AND heartbeat_at < ?`, reason, sqliteTimeOf(now), sqliteTimeOf(before))
	if err != nil {
		return 0, fmt.Errorf("sqlite fail stale tasks: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// DeleteTasksBefore implements store.Tasks; a task still heartbeating is
// kept.
func (s *Store) DeleteTasksBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks WHERE updated_at < ? AND heartbeat_at < ? LIMIT ?)`, sqliteTimeOf(before), sqliteTimeOf(before), limit)
	if err != nil {
		return 0, fmt.Errorf("sqlite delete tasks: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
