package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// LiveTask is the SQL condition of a task that is not terminal (store.Tasks).
const LiveTask = `status IN ('working', 'input_required')`

// ProgressText is the progress column of a task: its JSON, "" for none.
func ProgressText(p *toolrouter.TaskProgress) string {
	if p == nil {
		return ""
	}
	b, _ := json.Marshal(p) // numbers and a string always encode
	return string(b)
}

// TaskOf is a task from its stored body and the columns that change while
// it runs.
func TaskOf(body, client, status, message, progress string, cancel bool, updated time.Time) (*toolrouter.Task, error) {
	t := &toolrouter.Task{}
	if err := json.Unmarshal([]byte(body), t); err != nil {
		return nil, fmt.Errorf("task of %q: stored body: %w", client, err)
	}
	t.Client, t.Status, t.StatusMessage, t.CancelRequested, t.UpdatedAt = client, toolrouter.TaskStatus(status), message, cancel, updated
	if t.Status == toolrouter.TaskFailed && t.Error == "" {
		t.Error = message // failed by FailStaleTasks: the columns say why
	}
	if progress != "" {
		t.Progress = &toolrouter.TaskProgress{}
		if err := json.Unmarshal([]byte(progress), t.Progress); err != nil {
			return nil, fmt.Errorf("task %q: stored progress: %w", t.TaskID, err)
		}
	}
	return t, nil
}
