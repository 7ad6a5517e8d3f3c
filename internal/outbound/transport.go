package outbound

import (
	"net"
	"net/http"
	"time"
)

// NewTransport is the tuned transport of every outbound client: proxies
// from the environment, bounded dial and TLS handshake, TCP keep-alive,
// HTTP/2 when the server offers it, and a large idle pool so that many
// concurrent calls to one host reuse their connections. Each client builds
// its own (no shared package state).
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
