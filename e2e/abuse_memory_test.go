package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// The memory tests measure RSS, so they run a binary built without the race
// detector (whose shadow memory would dwarf what they measure).
var (
	plainOnce sync.Once
	plainErr  error
)

func plainBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "toolrouterd-plain")
	plainOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", bin, "../cmd/toolrouterd").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	if b := os.Getenv("TOOLROUTER_ABUSE_BIN"); b != "" { // to measure another build
		return b
	}
	return bin
}

// startPlain starts the plain binary with the registry text and env.
func startPlain(t *testing.T, registryYAML string, env ...string) *proc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(path, []byte(registryYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := plainBinary(t)
	if filepath.Dir(bin) != binDir { // start runs names in binDir
		link := filepath.Join(binDir, "toolrouterd-measured")
		os.Remove(link)
		if err := os.Symlink(bin, link); err != nil {
			t.Fatal(err)
		}
		bin = link
	}
	p := start(t, filepath.Base(bin), append([]string{"TOOLROUTER_ADDR=127.0.0.1:0", "TOOLROUTER_REGISTRY=" + path, "TOOLROUTER_STORE=memory://", "TOOLROUTER_LOG_LEVEL=debug"}, env...))
	p.addr = p.waitOutput(t, `"listening" log line`, listeningAddr)
	return p
}

// rss is the resident set size of pid in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read RSS: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// peakRSS samples the RSS of p until done returns true (or the deadline),
// and returns the largest sample.
func peakRSS(t *testing.T, p *proc, deadline time.Duration, done func() bool) int64 {
	t.Helper()
	var peak int64
	poll.Until(t, deadline, func() error {
		if peak = max(peak, rss(t, p.cmd.Process.Pid)); !done() {
			return fmt.Errorf("not done (peak RSS %d MB)", peak>>20)
		}
		return nil
	})
	return peak
}

// Issue 14, item 4: clients that never read a large answer do not hold it:
// /schemas is encoded as it is written, and the write deadline closes their
// connections, so memory stays near its idle level.
func TestAbuseSlowReaders(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Fatalf("this test reads RSS from /proc: %v", err)
	}
	var reg strings.Builder
	reg.WriteString("tools:\n")
	desc := strings.Repeat("d", 10_000)
	for i := 0; i < 1500; i++ {
		fmt.Fprintf(&reg, "  - {name: t%d, endpoint: 'http://127.0.0.1:9/t', description: %s}\n", i, desc)
	}
	rt := startPlain(t, reg.String(), "TOOLROUTER_WRITE_TIMEOUT=2s")

	// The whole answer, read by a client that reads.
	resp, err := http.Get(rt.URL() + "/schemas/openai")
	if err != nil {
		t.Fatal(err)
	}
	full, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	idle := rss(t, rt.cmd.Process.Pid)

	const clients = 30
	conns := make([]net.Conn, clients)
	for i := range conns {
		// A small receive window, set before connecting, so that the
		// kernel cannot absorb the answer for the client.
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		c, err := d.Dial("tcp", rt.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /schemas/openai HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") // a loopback Host: others are refused (DNS rebinding)
		conns[i] = c
	}
	// Each stuck request ends (and is counted) once its write deadline cuts it.
	ended := func() bool { return schemaRequests(t, rt) >= clients+1 }
	peak := peakRSS(t, rt, 60*time.Second, ended)
	t.Logf("answer %d MB; RSS idle %d MB, peak with %d clients not reading %d MB", full>>20, idle>>20, clients, peak>>20)
	if growth := peak - idle; growth > 150<<20 {
		t.Errorf("RSS grew by %d MB for %d stuck clients of a %d MB answer", growth>>20, clients, full>>20)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("client %d: the server did not close the connection", i)
		}
		if n >= full {
			t.Fatalf("client %d got %d of %d bytes: the answer was not cut", i, n, full)
		}
	}
}

// Issue 14, item 5: at a memory limit, concurrent batches of maximal tool
// outputs leave the process up with RSS bounded: a batch holds at most
// TOOLROUTER_MAX_BATCH_OUTPUT_BYTES of output, the calls beyond fail as
// resource.
func TestAbuseBigOutputsUnderMemoryLimit(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Fatalf("this test reads RSS from /proc: %v", err)
	}
	const outSize = 8 << 20
	big := append(append([]byte(`{"data":"`), bytes.Repeat([]byte("a"), outSize-11)...), '"', '}')
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(big)
	}))
	defer tool.Close()
	rt := startPlain(t, fmt.Sprintf("tools:\n  - {name: big, endpoint: %s}\n", tool.URL),
		"GOMEMLIMIT=256MiB", "TOOLROUTER_MAX_BATCH_OUTPUT_BYTES=33554432",
		// Not about the write deadline: a race-built client decoding 4 × 32 MB
		// on a loaded machine may take longer than the default 30s to read.
		"TOOLROUTER_WRITE_TIMEOUT=10m", "TOOLROUTER_BATCH_CONCURRENCY=16", "TOOLROUTER_LOG_LEVEL=info")
	idle := rss(t, rt.cmd.Process.Pid)

	const batches, calls = 4, 16
	call := map[string]any{"name": "big", "arguments": "{}"}
	tcs := make([]any, calls)
	for i := range tcs {
		tcs[i] = call
	}
	body, _ := json.Marshal(map[string]any{"plan_id": "big", "tool_calls": tcs})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, capped, finished int
	var errs []string
	for b := 0; b < batches; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { mu.Lock(); finished++; mu.Unlock() }()
			resp, err := http.Post(rt.URL()+"/route/batch", "application/json", bytes.NewReader(body))
			if err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
				return
			}
			defer resp.Body.Close()
			var out struct {
				Results []struct {
					Success       bool
					ErrorCategory *string `json:"error_category"`
					Error         *string
				}
			}
			if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&out); err != nil || len(out.Results) != calls {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("status %d, %d results, %v", resp.StatusCode, len(out.Results), err))
				mu.Unlock()
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range out.Results {
				switch {
				case r.Success:
					ok++
				case *r.ErrorCategory == "resource" && strings.Contains(*r.Error, "TOOLROUTER_MAX_BATCH_OUTPUT_BYTES"):
					capped++
				default:
					errs = append(errs, *r.Error)
				}
			}
		}()
	}
	peak := peakRSS(t, rt, 120*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return finished == batches })
	wg.Wait()
	t.Logf("%d batches of %d calls of %d MB outputs: %d kept, %d capped; RSS idle %d MB, peak %d MB", batches, calls, outSize>>20, ok, capped, idle>>20, peak>>20)
	if len(errs) > 0 {
		t.Fatalf("failures: %q", errs[:min(len(errs), 5)])
	}
	if err := rt.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process died: %v", err)
	}
	if ok > batches*4 || ok+capped != batches*calls {
		t.Errorf("%d outputs kept, %d capped: want at most 4 per batch (32 MiB / 8 MiB)", ok, capped)
	}
	// 3.3 GB before the cap. At most 4 × 32 MiB of outputs are kept, each
	// held a few times over while it is encoded (output, provider_result,
	// the response buffer) and in the memory store; the GC runs behind
	// under load, so the bound leaves room for that, far below the old cost.
	if peak > 1<<30 {
		t.Errorf("peak RSS %d MB", peak>>20)
	}
}

// schemaRequests is the number of /schemas requests the server finished.
func schemaRequests(t *testing.T, p *proc) int {
	resp, err := http.Get(p.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "toolrouter_http_requests_total{") && strings.Contains(l, `route="/schemas/{provider}"`) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}
