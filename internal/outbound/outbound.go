// Package outbound holds what every client of another service shares
// (remote for tool endpoints, mcpclient for MCP servers, llm for model
// providers): the tuned http.Transport, whether an error means the
// endpoint could not be reached, jittered exponential backoff and the wait
// between attempts, the Retry-After reading, and the message of a JSON
// error body. It depends on the standard library only.
package outbound

import (
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// NewTransport is the tuned transport of every outbound client: bounded
// dial and TLS handshake, TCP keep-alive, and a large idle pool so that
// many concurrent calls to one host reuse their connections. Each client
// builds its own (no shared package state).
func NewTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

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
