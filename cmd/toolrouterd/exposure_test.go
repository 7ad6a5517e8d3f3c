package main

import (
	"net"
	"strings"
	"testing"
)

func TestCheckExposure(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080} }
	for _, c := range []struct {
		addr              net.Addr
		auth, allow       bool
		loopback, refused bool
	}{
		{tcp("127.0.0.1"), false, false, true, false},
		{tcp("::1"), false, false, true, false},
		{tcp("0.0.0.0"), false, false, false, true},
		{tcp("::"), false, false, false, true},
		{tcp("192.0.2.10"), false, false, false, true},
		{tcp("0.0.0.0"), false, true, false, false},
		{tcp("0.0.0.0"), true, false, false, false},
		{tcp("127.0.0.1"), true, false, true, false},
	} {
		e, err := checkExposure(c.addr, ":8080", c.auth, c.allow)
		if (err != nil) != c.refused || e.Loopback != c.loopback || e.Auth != c.auth {
			t.Errorf("%v auth=%v allow=%v: %+v %v", c.addr, c.auth, c.allow, e, err)
		}
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "TOOLROUTER_ADDR") || !strings.Contains(msg, "TOOLROUTER_ALLOW_UNAUTHENTICATED=true") {
				t.Errorf("refusal %q: want one line naming both settings", msg)
			}
		} else if e.Why == "" {
			t.Errorf("%v: no reason for the log", c.addr)
		}
	}
}
