// Package e2e tests the real binaries over real sockets: toolrouterd with a
// registry of real tool servers (the example tool server and faulty ones
// started here), driven like a user would drive it.
//
// A test that shares nothing with the others calls t.Parallel(): its
// processes listen on 127.0.0.1:0, its store is memory:// or a database of
// its own (pgtest), its files are in t.TempDir(), it sets no variable of
// this process, and it asserts no duration. Up to -parallel of them run at
// once: 4 unless -parallel is given (not GOMAXPROCS, the testing package's
// default: these tests mostly wait on other processes and sockets, so on a
// two-core machine two at a time left a core idle — e2e used about 0.8 of
// the 2 cores). Serial on purpose, and to stay so: tests that
// assert timing or rates (200 ms run heartbeats, log lines per second, a
// concurrency peak reached within a window, shutdown deadlines, expiry
// and circuit cool-downs), that measure memory or cost (abuse_*) or hammer
// the router from many goroutines, that take an address with freeAddr
// (free a moment ago: a parallel test could take it), that drive Chromium,
// or that kill, restart or signal processes
// (crash, process, edge_shutdown, mcpserver, mcpstdio, store_lost,
// replicas, runs). Running a binary that starts no server (`toolrouterd
// check`, a configuration error) or linking one (make build's command) is
// none of these: those tests are parallel.
package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/toolrouterd/toolrouterd/api"
	"github.com/toolrouterd/toolrouterd/internal/store/pgtest"
)

var (
	binDir    string // holds toolrouterd and exampletools, built once
	specRoute routers.Router
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if !flagGiven("test.parallel") {
		if err := flag.Set("test.parallel", "4"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "toolrouterd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// Tests run the race-enabled binaries, without DWARF (-w: as make
	// test-race links the test binaries; race reports still name files and
	// lines); benchmarks (TOOLROUTER_BENCH=1) measure plain ones. One go
	// command builds the four, linking them side by side.
	flags := []string{"build", "-race", "-ldflags=-w"}
	if os.Getenv("TOOLROUTER_BENCH") != "" {
		flags = []string{"build"}
	}
	flags = append(flags, "-o", dir+string(filepath.Separator), "../cmd/toolrouterd", "../cmd/exampletools", "../cmd/fakellm", "../bench/loadgen")
	cmd := exec.Command("go", flags...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the binaries:", err)
		return 1
	}
	// The console's files (GET /ui) are checked as text.
	for _, ct := range []string{"text/html", "text/javascript", "text/css"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec)
	if err == nil {
		doc.Servers = nil
		specRoute, err = legacy.NewRouter(doc)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load spec:", err)
		return 1
	}
	return pgtest.Main(m)
}

// flagGiven says whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// freeAddr returns a loopback address that was free a moment ago, for a
// process that cannot report the port it bound (server-everything).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// closedAddr returns a loopback address where connections are refused: a
// socket bound there, and held until t ends so no one else gets the port,
// that does not listen.
func closedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

// proc is a started binary whose output is kept for assertions.
type proc struct {
	cmd  *exec.Cmd
	addr string // the address it listens on, from its start-up line
	mu   sync.Mutex
	out  bytes.Buffer
	grew chan struct{} // closed (and replaced) when output arrives
	done chan struct{}
	err  error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.grew)
	p.grew = make(chan struct{})
	return p.out.Write(b)
}

// Output is everything the process printed so far.
func (p *proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *proc) URL() string { return "http://" + p.addr }

// waitOutput waits until find, shown the whole output so far, reports ok,
// and returns what it found; it fails t when the process exits first or
// after 20 seconds.
func (p *proc) waitOutput(t testing.TB, what string, find func(out string) (string, bool)) string {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		p.mu.Lock()
		out, grew := p.out.String(), p.grew
		p.mu.Unlock()
		if v, ok := find(out); ok {
			return v
		}
		select {
		case <-grew:
		case <-p.done:
			if v, ok := find(p.Output()); ok {
				return v
			}
			t.Fatalf("%s exited (%v) before %s:\n%s", filepath.Base(p.cmd.Path), p.err, what, p.Output())
		case <-timeout.C:
			t.Fatalf("%s: no %s in 20s:\n%s", filepath.Base(p.cmd.Path), what, p.Output())
		}
	}
}

// reload writes content to the registry file at path, sends SIGHUP and
// waits for the next "registry reload" line (reloaded or rejected).
func (p *proc) reload(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	before := strings.Count(p.Output(), "registry reload")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitOutput(t, "reload logged", func(out string) (string, bool) {
		return "", strings.Count(out, "registry reload") > before
	})
}

// contains is a waitOutput finder for s.
func contains(s string) func(string) (string, bool) {
	return func(out string) (string, bool) { return "", strings.Contains(out, s) }
}

// submatch is a waitOutput finder for re's first group.
func submatch(re *regexp.Regexp) func(string) (string, bool) {
	return func(out string) (string, bool) {
		m := re.FindStringSubmatch(out)
		if m == nil {
			return "", false
		}
		return m[1], true
	}
}

// listeningAddr finds toolrouterd's start-up log line ("listening",
// with the bound address).
func listeningAddr(out string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		var l struct{ Message, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Message == "listening" && l.Addr != "" {
			return l.Addr, true
		}
	}
	return "", false
}

// start runs a binary from binDir with env added to the environment, and
// stops it (SIGTERM, then SIGKILL) when the test ends.
func start(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	// The race runtime sleeps 1s at exit unless told otherwise.
	return startEnv(t, name, append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...), args...)
}

// startEnv is start with the whole environment given.
func startEnv(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{grew: make(chan struct{}), done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(binDir, name), args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		// Idle keep-alive connections would make the server's graceful
		// shutdown wait for them.
		http.DefaultClient.CloseIdleConnections()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

var toolsListening = regexp.MustCompile(`exampletools: listening on http://(\S+)\n`)

// startTools starts the example tool server on a port of its choosing.
func startTools(t testing.TB) *proc {
	t.Helper()
	p := start(t, "exampletools", nil, "-addr", "127.0.0.1:0")
	p.addr = p.waitOutput(t, "listening line", submatch(toolsListening))
	return p
}

// startRouter starts toolrouterd on a port of its choosing, with the
// registry text written to a file and extra environment; it returns the
// process and the registry path.
func startRouter(t testing.TB, registryYAML string, env ...string) (*proc, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.yaml")
	if err := os.WriteFile(path, []byte(registryYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{
		"TOOLROUTER_ADDR=127.0.0.1:0",
		"TOOLROUTER_REGISTRY=" + path,
		"TOOLROUTER_STORE=memory://",
		"TOOLROUTER_LOG_LEVEL=debug",
	}
	p := start(t, "toolrouterd", append(base, env...))
	p.addr = p.waitOutput(t, `"listening" log line`, listeningAddr)
	return p, path
}

// exampleRegistry is testdata/registry.yaml (the example tool server's
// tools, owned by the tests: a reader's edits to examples/ do not reach it)
// with its tool server address replaced by addr.
func exampleRegistry(t testing.TB, addr string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/registry.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "127.0.0.1:9001", addr)
}

// response is a checked HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, r.Body)
	}
	return m
}

// do sends a request and validates the response against the OpenAPI spec.
func do(t testing.TB, method, url string, body any, header ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstSpec(t, req, resp, raw)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// checkAgainstSpec validates a response against api/openapi.yaml.
func checkAgainstSpec(t testing.TB, req *http.Request, resp *http.Response, raw []byte) {
	t.Helper()
	route, params, err := specRoute.FindRoute(req)
	if err != nil {
		return // paths outside the spec (404s) have nothing to check
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s → %d does not match the spec: %v\n%s", req.Method, req.URL.Path, resp.StatusCode, err, raw)
	}
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	Event string
	Data  map[string]any
}

// stream POSTs body with Accept: text/event-stream (and header, pairs of
// name and value) and collects the events.
func stream(t testing.TB, url string, body any, header ...string) (int, []sseEvent) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("bad SSE data %q: %v", line, err)
			}
		case line == "":
			if cur.Event != "" {
				events = append(events, cur)
			}
			cur = sseEvent{}
		}
	}
	return resp.StatusCode, events
}
