// Package pgtest gives tests a throwaway PostgreSQL database.
//
// Start returns the URL of a fresh, empty database. With
// TOOLROUTER_TEST_POSTGRES set to a server URL (a user that may CREATE
// DATABASE), the database is created there and dropped after the test.
// Otherwise one private server per test process is started from the Debian
// binaries (/usr/lib/postgresql/*/bin): initdb into a temporary directory,
// on a free port of 127.0.0.1, as an unprivileged user when the tests run
// as root (PostgreSQL refuses to run as root), with fsync off. Use Main in
// TestMain so the server is stopped and its directory removed when the
// tests end:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// The server also dies with the test process (Pdeathsig), and directories a
// killed run left behind are removed by the next run.
//
// Without the binaries, Start fails the test, saying how to install them
// (`make deps`, which `make test` runs first): a test never passes by
// skipping for want of them. With -short (`make test-unit`, the tier that
// starts no server) Start skips the test: `make test` never sets -short.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/randid"
)

// EnvURL names the variable holding an existing server's URL.
const EnvURL = "TOOLROUTER_TEST_POSTGRES"

// NotInstalled is the failure when no server binaries are found.
const NotInstalled = "PostgreSQL server not installed: run `make deps` (or bash scripts/install-postgres.sh)"

// dirPrefix names the temporary directories of local servers.
const dirPrefix = "toolrouter-pgtest-"

var (
	once            sync.Once
	local           *server
	started         error // why the local server could not start
	errNotInstalled = errors.New(NotInstalled)
	dbSeq           atomic.Int64
)

// Start returns the URL of a new, empty database for t (see the package
// comment). Every call makes another database.
func Start(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: PostgreSQL is not started with -short (make test-unit); make test runs this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if env := os.Getenv(EnvURL); env != "" {
		u, err := createDatabase(ctx, env, true, t)
		if err != nil {
			t.Fatalf("pgtest: %s: %v", EnvURL, err)
		}
		return u
	}
	once.Do(func() { local, started = startLocal() })
	if started != nil {
		t.Fatalf("pgtest: start PostgreSQL: %v", started)
	}
	u, err := createDatabase(ctx, local.adminURL(), false, t)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// Main runs the tests, then stops the local server (when one was started)
// and removes its directory; it returns m.Run's exit code.
func Main(m *testing.M) int {
	code := m.Run()
	if local != nil {
		if err := local.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// createDatabase creates a uniquely named database on the server of
// adminURL and returns its URL. drop asks for it to be dropped when t ends
// (a local server is thrown away whole instead).
func createDatabase(ctx context.Context, adminURL string, drop bool, t testing.TB) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("want a postgres://user:password@host:port/db URL, got %q", redact(adminURL))
	}
	name := fmt.Sprintf("toolrouter_test_%d_%d_%s", os.Getpid(), dbSeq.Add(1), randid.Hex(4))
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", redact(adminURL), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	if drop {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, adminURL)
			if err != nil {
				t.Logf("pgtest: drop database %s: %v", name, err)
				return
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
				t.Logf("pgtest: drop database %s: %v", name, err)
			}
		})
	}
	u.Path = "/" + name
	return u.String(), nil
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}

// server is a private PostgreSQL server of this test process.
type server struct {
	dir  string // owns data/, sock/, postgres.log, owner.pid
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the postmaster exited
}

func (s *server) adminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// binDir returns the directory of the newest installed initdb and postgres.
func binDir() (string, bool) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	sort.Slice(matches, func(i, j int) bool { return pgVersion(matches[i]) > pgVersion(matches[j]) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if isExec(filepath.Join(dir, "initdb")) && isExec(m) {
			return dir, true
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if isExec(filepath.Join(dir, "postgres")) {
			return dir, true
		}
	}
	return "", false
}

func pgVersion(bin string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(bin))), 64)
	return v
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// runAs returns the credential to run the server with: none when the tests
// are not root, else the postgres user when it exists, else nobody.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: false, Groups: []uint32{}}, nil
	}
	return nil, errors.New("running as root and neither user postgres nor nobody exists")
}

// startLocal initdbs and starts a server, retrying on another port when
// the chosen one was taken meanwhile.
func startLocal() (*server, error) {
	bin, ok := binDir()
	if !ok {
		return nil, errNotInstalled
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	removeStale()
	base := os.TempDir()
	if cred != nil {
		// The unprivileged user must reach the directory.
		if fi, err := os.Stat(base); err != nil || fi.Mode().Perm()&0o001 == 0 {
			base = "/tmp"
		}
	}
	dir, err := os.MkdirTemp(base, dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "sock"), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		for _, p := range []string{dir, filepath.Join(dir, "sock")} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"--username=postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.Env = serverEnv()
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := launch(bin, dir, cred)
		if err == nil {
			return s, nil
		}
		last = err
	}
	os.RemoveAll(dir)
	return nil, last
}

func serverEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
}

// launch starts the postmaster on a free port and waits until it accepts
// connections.
func launch(bin, dir string, cred *syscall.Credential) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(port),
		"-k", filepath.Join(dir, "sock"),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=200",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "logging_collector=off",
	)
	cmd.Dir = dir
	cmd.Env = serverEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig (SIGQUIT: immediate shutdown) stops the server if this
	// process dies without tearing it down. Linux sends it when the thread
	// that forked the child exits, so the child is started from a goroutine
	// locked to its thread for as long as the server runs. Go sets it after
	// switching credentials, which would otherwise clear it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	s := &server{dir: dir, port: port, cmd: cmd, done: make(chan struct{})}
	startErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the server
		if err := cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		cmd.Wait()
		close(s.done)
	}()
	if err := <-startErr; err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.adminURL()+"&connect_timeout=2")
		if err == nil {
			conn.Close(ctx)
			cancel()
			return s, nil
		}
		cancel()
		select {
		case <-s.done:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("postgres exited at start (%v):\n%s", cmd.ProcessState, tail(log))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("postgres not ready after 60s: %v\n%s", err, tail(log))
		}
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// stop shuts the server down (fast shutdown, then SIGKILL after 15s) and
// removes its directory.
func (s *server) stop() error {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove %s: %w", s.dir, err)
	}
	return nil
}

// removeStale deletes the directories of earlier runs whose test process
// and server are both gone (a run killed before Main could clean up).
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	if os.TempDir() != "/tmp" {
		more, _ := filepath.Glob(filepath.Join("/tmp", dirPrefix+"*"))
		dirs = append(dirs, more...)
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < 10*time.Second {
			continue // maybe another test process just made it
		}
		if alive(readPID(filepath.Join(d, "owner.pid"))) || alive(readPID(filepath.Join(d, "data", "postmaster.pid"))) {
			continue
		}
		os.RemoveAll(d)
	}
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
