// Package outbound holds what every client of another service shares
// (remote for tool endpoints, mcpclient for MCP servers, llm for model
// providers): the tuned transport (NewTransport), whether an error means the
// endpoint could not be reached, jittered exponential backoff and the wait
// between attempts, the Retry-After reading, and the message of a JSON
// error body. It depends on the standard library only.
package outbound

import (
	"errors"
	"net"
	"syscall"
)

// Unreachable reports whether err means no connection to an endpoint could be
// made: refused, unknown host, dial timeout, no route.
func Unreachable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH)
}
