package store

import (
	"encoding/json"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// What the SQL stores share: how rows map to values and back.

// keyResponse is how a key's answer is stored: like Memory, an empty answer
// leaves the key in progress (NULL).
func keyResponse(response []byte) any {
	if len(response) == 0 {
		return nil
	}
	return response
}

// decodeRun builds a Run from its stored body and columns.
func decodeRun(body []byte, owner string, heartbeat time.Time) (*toolrouter.Run, error) {
	var run toolrouter.Run
	if err := json.Unmarshal(body, &run); err != nil {
		return nil, err
	}
	run.Owner, run.HeartbeatAt = owner, heartbeat
	return &run, nil
}
