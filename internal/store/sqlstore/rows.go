package sqlstore

import (
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// KeyResponse is how a key's answer is stored: like store/memory, an empty answer
// leaves the key in progress (NULL).
func KeyResponse(response []byte) any {
	if len(response) == 0 {
		return nil
	}
	return response
}

// DecodeRun builds a Run from its stored body and columns.
func DecodeRun(body []byte, owner, client string, heartbeat time.Time) (*toolrouter.Run, error) {
	run, err := toolrouter.DecodeStored(body)
	if err != nil {
		return nil, err
	}
	run.Owner, run.Client, run.HeartbeatAt = owner, client, heartbeat
	return run, nil
}
