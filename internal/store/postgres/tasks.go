package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// CreateTask implements store.Tasks.
func (p *Store) CreateTask(ctx context.Context, t *toolrouter.Task, beat time.Time) error {
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("postgres create task: %w", err)
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO tasks (task_id, client, status, status_message, created_at, updated_at, heartbeat_at, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, t.TaskID, t.Client, string(t.Status), t.StatusMessage,
		t.CreatedAt, t.UpdatedAt, beat, string(body))
	if err != nil {
		return fmt.Errorf("postgres create task: %w", err)
	}
	return nil
}

// GetTask implements store.Tasks.
func (p *Store) GetTask(ctx context.Context, id string) (*toolrouter.Task, error) {
	var (
		client, status, message, progress, body string
		cancel                                  bool
		updated                                 time.Time
	)
	err := p.pool.QueryRow(ctx, `SELECT client, status, status_message, cancel_requested, progress, updated_at, body FROM tasks WHERE task_id = $1`, id).
		Scan(&client, &status, &message, &cancel, &progress, &updated, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "task %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres get task: %w", err)
	}
	return sqlstore.TaskOf(body, client, status, message, progress, cancel, updated.UTC())
}

// BeatTask implements store.Tasks.
func (p *Store) BeatTask(ctx context.Context, id string, beat time.Time, progress *toolrouter.TaskProgress, status toolrouter.TaskStatus, message string) (bool, bool, error) {
	var cancel bool
	err := p.pool.QueryRow(ctx, `UPDATE tasks SET heartbeat_at = $1,
		progress = CASE WHEN $2 = '' THEN progress ELSE $2 END,
		status = CASE WHEN $3 = '' THEN status ELSE $3 END,
		status_message = CASE WHEN $3 = '' THEN status_message ELSE $4 END,
		updated_at = CASE WHEN $2 = '' AND $3 = '' THEN updated_at ELSE $1 END
		WHERE task_id = $5 AND `+sqlstore.LiveTask+` RETURNING cancel_requested`,
		beat, sqlstore.ProgressText(progress), string(status), message, id).Scan(&cancel)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("postgres beat task: %w", err)
	}
	return cancel, true, nil
}

// SaveTask implements store.Tasks.
func (p *Store) SaveTask(ctx context.Context, t *toolrouter.Task) (bool, error) {
	body, err := json.Marshal(t)
	if err != nil {
		return false, fmt.Errorf("postgres save task: %w", err)
	}
	tag, err := p.pool.Exec(ctx, `UPDATE tasks SET status = $1, status_message = $2, progress = $3, updated_at = $4, body = $5
		WHERE task_id = $6 AND `+sqlstore.LiveTask, string(t.Status), t.StatusMessage, sqlstore.ProgressText(t.Progress), t.UpdatedAt, string(body), t.TaskID)
	if err != nil {
		return false, fmt.Errorf("postgres save task: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// RequestTaskCancel implements store.Tasks.
func (p *Store) RequestTaskCancel(ctx context.Context, id string, now time.Time) (bool, error) {
	tag, err := p.pool.Exec(ctx, `UPDATE tasks SET cancel_requested = TRUE, updated_at = $1 WHERE task_id = $2 AND `+sqlstore.LiveTask, now, id)
	if err != nil {
		return false, fmt.Errorf("postgres cancel task: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// FailStaleTasks implements store.Tasks: the status columns change, the
// body keeps the task as created, and GetTask reads the columns over it.
func (p *Store) FailStaleTasks(ctx context.Context, before, now time.Time, reason string) (int, error) {
	tag, err := p.pool.Exec(ctx, `UPDATE tasks SET status = 'failed', status_message = $1, updated_at = $2
		WHERE status = 'working' AND heartbeat_at < $3`, reason, now, before)
	if err != nil {
		return 0, fmt.Errorf("postgres fail stale tasks: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteTasksBefore implements store.Tasks; a task still heartbeating is
// kept.
func (p *Store) DeleteTasksBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM tasks WHERE updated_at < $1 AND heartbeat_at < $1 LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("postgres delete tasks: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
