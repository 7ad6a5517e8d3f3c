package remote

// Internals exposed to the remote_test package.
var (
	RetryAfter = retryAfter
	Backoff    = backoff
)
