package e2e_test

import (
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// nonLoopbackIPs are this machine's own addresses on its other
// interfaces (no link-local IPv6: it needs a zone); dialing them stays on
// the machine.
func nonLoopbackIPs(t *testing.T) []net.IP {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var ips []net.IP
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && !n.IP.IsUnspecified() {
				ips = append(ips, n.IP)
			}
		}
	}
	return ips
}

// listeningLine is toolrouterd's "listening" line, decoded.
type listeningLine struct {
	Message      string `json:"message"`
	Addr         string `json:"addr"`
	LoopbackOnly *bool  `json:"loopback_only"`
	Auth         *bool  `json:"auth"`
	Reach        string `json:"reach"`
}

func findListening(out string) (listeningLine, bool) {
	for _, line := range strings.Split(out, "\n") {
		var l listeningLine
		if json.Unmarshal([]byte(line), &l) == nil && l.Message == "listening" && l.Addr != "" {
			return l, true
		}
	}
	return listeningLine{}, false
}

// cleanEnv is the test's environment without any TOOLROUTER_ variable,
// plus env.
func cleanEnv(env ...string) []string {
	out := []string{"GORACE=atexit_sleep_ms=0"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLROUTER_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// TestExposureDefaultIsLoopback (issue 38 item 2): started with no
// authentication and no TOOLROUTER_ADDR, toolrouterd binds 127.0.0.1:8080,
// says so (loopback_only, auth false), and is not reachable on any of this
// machine's non-loopback addresses. When 8080 is taken by something else
// the binary's refusal still has to name the loopback default.
func TestExposureDefaultIsLoopback(t *testing.T) {
	p := startEnv(t, "toolrouterd", cleanEnv("TOOLROUTER_STORE=memory://"))
	out := p.waitOutput(t, `"listening" line or exit`, func(out string) (string, bool) {
		if _, ok := findListening(out); ok {
			return out, true
		}
		select {
		case <-p.done:
			return out, true
		default:
			return "", false
		}
	})
	l, ok := findListening(out)
	if !ok {
		// 8080 is in use on this machine: the attempt was the loopback default.
		if !strings.Contains(out, `"addr":"127.0.0.1:8080"`) || !strings.Contains(out, "cannot listen") {
			t.Fatalf("no listening line, and the failure does not name 127.0.0.1:8080:\n%s", out)
		}
		t.Logf("127.0.0.1:8080 is taken here; the binary tried the loopback default:\n%s", out)
		return
	}
	if l.Addr != "127.0.0.1:8080" || l.LoopbackOnly == nil || !*l.LoopbackOnly || l.Auth == nil || *l.Auth || l.Reach == "" {
		t.Fatalf("listening line %+v, want 127.0.0.1:8080, loopback_only, no auth, and why", l)
	}
	ips := nonLoopbackIPs(t)
	if len(ips) == 0 {
		t.Logf("no non-loopback interface: checked the bound address only (%s)", l.Addr)
	}
	for _, ip := range ips {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), "8080"), 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("toolrouterd with no auth is reachable on %s:8080", ip)
		}
	}
}

// TestExposureNonLoopbackNeedsAuthOrSetting: a non-loopback
// TOOLROUTER_ADDR with no authentication is refused at start with one line
// naming TOOLROUTER_ADDR and TOOLROUTER_ALLOW_UNAUTHENTICATED; with
// TOOLROUTER_ALLOW_UNAUTHENTICATED=true it serves, warns and says why; with
// a key it serves with auth on.
func TestExposureNonLoopbackNeedsAuthOrSetting(t *testing.T) {
	base := []string{"TOOLROUTER_STORE=memory://", "TOOLROUTER_ADDR=0.0.0.0:0"}

	refused := startEnv(t, "toolrouterd", cleanEnv(base...))
	select {
	case <-refused.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20s after start, want a refusal:\n%s", refused.Output())
	}
	if refused.err == nil {
		t.Fatalf("exited 0:\n%s", refused.Output())
	}
	var naming []string
	for _, line := range strings.Split(refused.Output(), "\n") {
		if strings.Contains(line, "TOOLROUTER_ADDR") && strings.Contains(line, "TOOLROUTER_ALLOW_UNAUTHENTICATED") {
			naming = append(naming, line)
		}
	}
	if len(naming) != 1 || !strings.Contains(naming[0], "no authentication") || strings.Contains(refused.Output(), `"listening"`) {
		t.Errorf("want one line naming both settings and no listening line, got:\n%s", refused.Output())
	}

	allowed := startEnv(t, "toolrouterd", cleanEnv(append(base, "TOOLROUTER_ALLOW_UNAUTHENTICATED=true")...))
	allowed.waitOutput(t, `"listening" line`, listeningAddr)
	l, _ := findListening(allowed.Output())
	if l.LoopbackOnly == nil || *l.LoopbackOnly || l.Auth == nil || *l.Auth || !strings.Contains(l.Reach, "TOOLROUTER_ALLOW_UNAUTHENTICATED=true") {
		t.Errorf("listening line %+v, want loopback_only false, auth false, the setting as the reason", l)
	}
	if !strings.Contains(allowed.Output(), `"level":"warn"`) || !strings.Contains(allowed.Output(), "anyone who can reach it") {
		t.Errorf("no warning about serving without authentication:\n%s", allowed.Output())
	}
	_, port, _ := net.SplitHostPort(l.Addr)
	hosts := []string{"127.0.0.1"}
	for _, ip := range nonLoopbackIPs(t) {
		hosts = append(hosts, ip.String())
	}
	for _, h := range hosts {
		if r := do(t, "GET", "http://"+net.JoinHostPort(h, port)+"/healthz", nil); r.Status != 200 {
			t.Errorf("GET /healthz on %s: %d", h, r.Status)
		}
	}

	keyed := startEnv(t, "toolrouterd", cleanEnv(append(base, "TOOLROUTER_API_KEYS=k1")...))
	keyed.waitOutput(t, `"listening" line`, listeningAddr)
	if l, _ := findListening(keyed.Output()); l.Auth == nil || !*l.Auth || l.LoopbackOnly == nil || *l.LoopbackOnly {
		t.Errorf("with a key: listening line %+v, want auth true on a non-loopback address", l)
	}
}

// TestExposureReloadKeepsAuth: listening beyond loopback with the
// registry's clients as its only authentication, a reload of a file
// without clients is rejected (it would open the service to anyone), and
// requests still need a key.
func TestExposureReloadKeepsAuth(t *testing.T) {
	withClient := "tools: []\nclients:\n  - name: agent\n    key_env: EXPOSURE_CLIENT_KEY\n    tools: [\"*\"]\n"
	rt, path := startRouter(t, withClient, "TOOLROUTER_ADDR=0.0.0.0:0", "EXPOSURE_CLIENT_KEY=ck-1")
	rt.addr = strings.Replace(rt.addr, "[::]", "127.0.0.1", 1)
	rt.addr = strings.Replace(rt.addr, "0.0.0.0", "127.0.0.1", 1)
	rt.reload(t, path, "tools: []\n")
	if !strings.Contains(rt.Output(), "registry reload rejected") || !strings.Contains(rt.Output(), "TOOLROUTER_ALLOW_UNAUTHENTICATED=true") {
		t.Fatalf("the reload without clients was not rejected:\n%s", rt.Output())
	}
	if r := do(t, "GET", rt.URL()+"/schemas/openai", nil); r.Status != 401 {
		t.Errorf("without a key after the rejected reload: %d, want 401", r.Status)
	}
	if r := do(t, "GET", rt.URL()+"/schemas/openai", nil, "Authorization", "Bearer ck-1"); r.Status != 200 {
		t.Errorf("with the client's key: %d, want 200", r.Status)
	}
}
