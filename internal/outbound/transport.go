package outbound

import (
	"net"
	"net/http"
	"time"
)

// Limits of every outbound transport.
const (
	maxIdle        = 1024
	maxIdlePerHost = 256
	idleTimeout    = 90 * time.Second
)

func newDialer() *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
}

// newStd is the tuned http.Transport of every outbound client: proxies from
// the environment, bounded dial and TLS handshake, TCP keep-alive, HTTP/2
// when the server offers it, and a large idle pool so that many concurrent
// calls to one host reuse their connections.
func newStd(dialer *net.Dialer) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdlePerHost,
		IdleConnTimeout:       idleTimeout,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
