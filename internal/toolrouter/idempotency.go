package toolrouter

// ClaimState is what claiming an Idempotency-Key found.
type ClaimState int

// Claim states.
const (
	Claimed    ClaimState = iota // the caller owns the key and runs the request
	Answered                     // the key was answered before: replay Response
	InProgress                   // another request holds the key right now
)

// Claim is the outcome of claiming an Idempotency-Key (README, "HTTP
// details": a repeated key gets the stored answer).
type Claim struct {
	State    ClaimState
	Response []byte // the stored answer when State is Answered
}
