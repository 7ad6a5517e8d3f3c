package main

import (
	"fmt"
	"net"
)

// exposure is who can reach toolrouterd's listener and why that is
// allowed (docs/security.md "Who can reach it").
type exposure struct {
	Loopback bool   // bound to a loopback address: reachable from this machine only
	Auth     bool   // API keys, registry clients or JWT configured
	Why      string // for the "listening" line
}

// checkExposure decides whether toolrouterd may serve on bound (the
// listener's address; configured is TOOLROUTER_ADDR as given). With no
// authentication a non-loopback address is refused unless
// TOOLROUTER_ALLOW_UNAUTHENTICATED is true: the error is one line naming
// both settings.
func checkExposure(bound net.Addr, configured string, auth, allowUnauthenticated bool) (exposure, error) {
	e := exposure{Loopback: isLoopback(bound), Auth: auth}
	switch {
	case auth:
		e.Why = "authentication configured: every request needs a key or token"
	case e.Loopback:
		e.Why = "no authentication configured, so loopback only: reachable from this machine alone"
	case allowUnauthenticated:
		e.Why = "no authentication configured on a non-loopback address: allowed by TOOLROUTER_ALLOW_UNAUTHENTICATED=true"
	default:
		return e, fmt.Errorf("TOOLROUTER_ADDR %q listens beyond loopback (%s) and no authentication is configured "+
			"(TOOLROUTER_API_KEYS, registry clients or TOOLROUTER_JWT_ISSUER): configure one, bind 127.0.0.1, "+
			"or set TOOLROUTER_ALLOW_UNAUTHENTICATED=true to let anyone who can reach it call every tool", configured, bound)
	}
	return e, nil
}

// isLoopback reports whether a is a TCP address on a loopback IP (an
// unspecified one, 0.0.0.0 or ::, is every interface: not loopback).
func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}
