package mcpclient

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/outbound"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// failed classifies the error of a tools/call sent on session gen (the
// call's context not done): again says c should be sent again, on a new
// session; else out is the call's failure.
func (s *server) failed(gen uint64, err error, c *toolCall) (out toolrouter.Outcome, again bool) {
	// A call the server took may have run: never sent again as one that
	// did not reach it (fastcall.go).
	taken := errors.Is(err, errCallTaken)
	if !taken && (errors.Is(err, mcp.ErrSessionMissing) || s.lostSession(gen)) {
		// The server no longer knows the session: the call never ran.
		c.after, c.asked = s.markBroken(gen, errSessionLost), true
		if c.fresh {
			c.fresh = false
			return out, true
		}
		return s.unavailable(errSessionLost), false
	}
	if jerr := serverError(err); jerr != nil {
		return answeredError(jerr), false
	}
	// The transport failed.
	c.after, c.asked = s.markBroken(gen, err), true
	// The request did not leave: no connection, or a session already
	// closing.
	never := !taken && (outbound.Unreachable(err) || errors.Is(err, mcp.ErrConnectionClosed))
	switch {
	case len(s.command) > 0 && overLineLimit(err):
		// The process lives, but the session cannot resume in the middle
		// of a line: the supervisor stops the process and starts it again.
		// Not sent again: the same reply would break the next session too.
		msg := fmt.Sprintf("MCP server %s: reply over %d bytes (the stdio line limit); the server is restarted", s.name, mcp.DefaultMaxLineLength)
		s.m.log.Warn().Str("mcp_server", s.name).Str("tool", c.req.Tool.Name).Msg(msg)
		return toolrouter.Failure(toolrouter.CategoryResource, "%s", msg), false
	case never && c.fresh:
		c.fresh = false
		return out, true
	case !never && c.retries > 0:
		c.retries--
		return out, true
	case never:
		return s.unavailable(err), false
	case len(s.command) > 0:
		// A stdio server's connection only breaks when its process
		// exits: the server is gone (the supervisor restarts it).
		return toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: its process exited during the call (%s)", s.name, s.scrub(err)), false
	}
	return toolrouter.Failure(toolrouter.CategoryExecution, "MCP server %s: tools/call failed: %s", s.name, s.scrub(err)), false
}

// overLineLimit says err is the SDK's stdio reader refusing a line over
// mcp.DefaultMaxLineLength (its error is unexported: matched by its text,
// which TestStdioReplyOverLineLimit pins).
func overLineLimit(err error) bool {
	return strings.Contains(err.Error(), "exceeded the configured maximum line length")
}

// unavailable is the failure of a call that found no session, or could
// not reach the server.
func (s *server) unavailable(err error) toolrouter.Outcome {
	return toolrouter.Failure(toolrouter.CategoryResource, "MCP server %s unavailable: %s", s.name, s.scrub(err))
}

// answeredError is the failure of a call the server answered with a
// JSON-RPC error (unknown tool, invalid params …), classified by its
// message.
func answeredError(jerr *jsonrpc.Error) toolrouter.Outcome {
	msg := jerr.Message
	if msg == "" {
		msg = fmt.Sprintf("JSON-RPC error %d", jerr.Code)
	}
	cat := toolrouter.ClassifyError(msg)
	if cat == toolrouter.CategoryUnknown {
		cat = toolrouter.CategoryExecution
	}
	return toolrouter.Outcome{Err: msg, Category: cat, Answered: true}
}

// scrub is an error's message fit for clients and logs: the innermost
// network error when there is one (the SDK's wrapping repeats the
// request), and never the URL's credentials.
func (s *server) scrub(err error) string {
	if err == nil {
		return ""
	}
	var ue *url.Error
	msg := err.Error()
	if errors.As(err, &ue) && ue.Err != nil {
		msg = ue.Err.Error()
	}
	if red := redactURL(s.url); red != s.url {
		msg = strings.ReplaceAll(msg, s.url, red)
	}
	return msg
}

// The codes of the SDK's own errors, which look like JSON-RPC errors but
// never came from the server: client is closing, server is closing,
// rejected by transport.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// serverError finds the JSON-RPC error the server answered with in err's
// tree, skipping the SDK's own sentinels; nil when the server gave none.
func serverError(err error) *jsonrpc.Error {
	var found *jsonrpc.Error
	var walk func(error) bool
	walk = func(e error) bool {
		if je, ok := e.(*jsonrpc.Error); ok {
			switch je.Code {
			case codeClientClosing, codeServerClosing, codeRejected:
			default:
				found = je
				return true
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				return walk(x)
			}
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				if walk(x) {
					return true
				}
			}
		}
		return false
	}
	walk(err)
	return found
}
