//go:build !ownhttp

package outbound

import "net/http"

// Transport is the http.RoundTripper of every outbound client.
type Transport = http.Transport

// NewTransport is the tuned transport of every outbound client (newStd).
// Each client builds its own (no shared package state).
func NewTransport() *Transport { return newStd(newDialer()) }
