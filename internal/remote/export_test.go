package remote

// Internals exposed to the remote_test package.
var Backoff = backoff.Delay
