package httpapi

import (
	"net"
	"testing"
)

// TestLoopbackAddrAsItsText: the listener's address is judged from its IP
// (issue 37) exactly as from its text.
func TestLoopbackAddrAsItsText(t *testing.T) {
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, &net.TCPAddr{IP: net.IPv4(127, 9, 8, 7)},
		&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}, &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1")},
		&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80}, &net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "lo"},
		&net.TCPAddr{IP: net.IPv6zero}, &net.TCPAddr{}, &net.UnixAddr{Name: "/tmp/s", Net: "unix"},
	} {
		if got, want := loopbackAddr(a), isLoopback(a.String()); got != want {
			t.Errorf("loopbackAddr(%v) = %v, isLoopback of its text %v", a, got, want)
		}
	}
}
