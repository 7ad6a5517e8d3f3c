package toolrouter

import "time"

// ClaimState is the outcome of claiming an Idempotency-Key (docs/http-api.md "HTTP
// details").
type ClaimState int

// Claim states.
const (
	Claimed    ClaimState = iota // the caller owns the key and runs the request
	Answered                     // the key was answered before: replay Response
	InProgress                   // another request holds the key right now
	// Abandoned: the request holding the key stopped renewing its lease
	// (its replica died, or its answer could not be stored) without an
	// answer. It may have run its tool, so the key is not run again
	// (docs/operations.md "Storage and durability").
	Abandoned
)

// AbandonedGrace is how long an abandoned key is kept, in progress, for a
// retry to be told about it, before the stores purge it.
const AbandonedGrace = 24 * time.Hour

// Claim is the outcome of a store's ClaimKey.
type Claim struct {
	State    ClaimState
	Response []byte // the stored answer when State is Answered
}

// ErrKeyReused is returned by ClaimKey for a key already used with a
// different request (body, query or Accept header).
var ErrKeyReused = &Error{Code: EUNPROCESSABLE, Field: "Idempotency-Key",
	Message: "Idempotency-Key: already used with a different request (body, query or Accept)"}

// CheckSequences checks a request for n sequences of a plan.
func CheckSequences(planID string, n int64) error {
	if planID == "" {
		return Invalid("plan_id", "plan_id must be a non-empty string")
	}
	if n < 1 {
		return Invalid("n", "sequences to allocate must be >= 1, got %d", n)
	}
	return nil
}

// Interrupt marks a running run as interrupted at now: its replica stopped
// heartbeating before it finished.
func (r *Run) Interrupt(now time.Time) {
	msg := "run interrupted: the replica running it stopped before it finished"
	r.Status = RunInterrupted
	r.Error = &msg
	t := now.UTC()
	r.FinishedAt = &t
}
