package mcpclient

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// A stdio server (an mcp_servers entry with command instead of url, docs/mcp.md
// "MCP both ways") is a child process that toolrouterd starts, speaks MCP
// with over its stdin and stdout (newline-delimited JSON-RPC, one session
// that every call shares), and supervises like a remote server's
// session: when the process exits its tools fail with resource and the
// supervisor starts it again with backoff; on reload (entry removed or
// changed) and on shutdown it is stopped (stdin closed, then SIGTERM,
// then SIGKILL, as the MCP stdio transport asks). Its stderr goes to the
// log line by line.

const (
	// terminateAfter is how long a stopping stdio server has after its
	// stdin is closed before SIGTERM, and again before SIGKILL.
	terminateAfter = 3 * time.Second
	// maxStderrLine bounds one logged stderr line; the rest of a longer
	// line is dropped.
	maxStderrLine = 4 << 10
	// stderrLinesPerSecond bounds the stderr lines logged per second per
	// server; the lines over it are counted and the count logged.
	stderrLinesPerSecond = 50
	// drainPause is how long the drain of a stderr whose second's lines
	// are spent waits between reads (at most 64 KiB each).
	drainPause = 20 * time.Millisecond
)

// inheritedEnv are the variables of toolrouterd's environment a stdio
// server inherits (those the official TypeScript SDK passes, plus locale,
// temporary directory and time zone); the registry's env adds to them.
// Nothing else is inherited, so toolrouterd's own secrets never reach a
// server unless the registry passes them on.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// stdioTransport is the SDK's CommandTransport that remembers its
// connection, so that the process is stopped and reaped even when the
// session could not be set up (a failed initialize).
type stdioTransport struct {
	mcp.CommandTransport
	mu   sync.Mutex
	conn mcp.Connection
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.CommandTransport.Connect(ctx)
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, err
}

// stop stops the process (a no-op when the session's Close already did)
// and kills what is left of its process group (the children of an npx).
func (t *stdioTransport) stop() {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return
	}
	_ = c.Close() // closes stdin, waits, SIGTERM, SIGKILL; once
	killGroup(t.Command)
}

// newStdioTransport makes the command of a stdio server.
func (s *server) newStdioTransport() *stdioTransport {
	cmd := exec.Command(s.command[0], s.command[1:]...)
	cmd.Dir = s.dir
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = newLineLog(s.m.rawLog.With().Str("component", "mcp").Str("server", s.name).Logger(), time.Now)
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = terminateAfter
	setGroup(cmd)
	return &stdioTransport{CommandTransport: mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}}
}

// lineLog is an io.Writer that logs what is written to it line by line,
// each line at most maxStderrLine bytes and at most stderrLinesPerSecond
// lines a second.
type lineLog struct {
	log   zerolog.Logger
	now   func() time.Time
	sleep func(time.Duration)

	mu      sync.Mutex
	line    []byte
	skip    bool // the rest of an over-long line is being dropped
	window  time.Time
	lines   int
	dropped int
}

func newLineLog(log zerolog.Logger, now func() time.Time) *lineLog {
	return &lineLog{log: log, now: now, sleep: time.Sleep}
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.write(p)
	return len(p), nil
}

// ReadFrom drains r, the process's stderr (exec's io.Copy calls it): large
// reads, and once the second's lines are spent, each read is counted and
// dropped unscanned and the drain pauses, so that a flooding server fills
// the pipe and costs a read per pause instead of one per line. The pause
// holds back a server that writes faster than drainPause allows (its
// writes block) but never stops it: its calls are still served.
func (l *lineLog) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := r.Read(buf)
		total += int64(n)
		if n > 0 && l.write(buf[:n]) {
			l.sleep(drainPause)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// write logs the lines of p; spent says the second's lines are spent.
func (l *lineLog) write(p []byte) (spent bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(p) > 0 && l.lines >= stderrLinesPerSecond && l.now().Sub(l.window) < time.Second {
		l.dropped += bytes.Count(p, []byte{'\n'})
		l.line, l.skip = l.line[:0], p[len(p)-1] != '\n'
		return true
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !l.skip {
			room := maxStderrLine - len(l.line)
			if len(chunk) > room {
				l.line = append(l.line, chunk[:room]...)
				l.emit(true)
				l.skip = true
			} else {
				l.line = append(l.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !l.skip {
			l.emit(false)
		}
		l.skip = false
		p = p[i+1:]
	}
	return l.lines >= stderrLinesPerSecond
}

// emit logs the buffered line; l.mu is held.
func (l *lineLog) emit(truncated bool) {
	line := bytes.TrimRight(l.line, "\r")
	l.line = l.line[:0]
	if len(line) == 0 {
		return
	}
	now := l.now()
	if now.Sub(l.window) >= time.Second {
		if l.dropped > 0 {
			l.log.Warn().Int("dropped", l.dropped).Msg("MCP server stderr: lines dropped (more than 50 a second)")
		}
		l.window, l.lines, l.dropped = now, 0, 0
	}
	if l.lines >= stderrLinesPerSecond {
		l.dropped++
		return
	}
	l.lines++
	ev := l.log.Info().Str("stream", "stderr")
	if truncated {
		ev = ev.Bool("truncated", true)
	}
	ev.Msg(string(line))
}
