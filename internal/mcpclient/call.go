package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// call executes one tools/call. The outcomes:
//   - a result: success, or (isError) a failure the tool reported;
//   - a JSON-RPC error from the server (unknown tool, invalid params …):
//     a failure classified by its message, answered;
//   - the call's timeout: category timeout (the SDK then sends
//     notifications/cancelled);
//   - no session, the server unreachable: category resource, "MCP server
//     X unavailable: …", the error of a connection attempt begun after the
//     call (not of one that failed before it: the server may be back);
//   - the server no longer knows the session (it restarted, the session
//     expired): a new session, and the call again (it never ran);
//   - the connection lost mid-call: the call again on a new session if the
//     tool is idempotent, else a failure (the tool may have run): resource
//     for a stdio server (its process exited), else execution.
func (s *server) call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	if req.TaskOp != nil {
		return s.taskOp(ctx, req) // tasks.go
	}
	timeout := req.Tool.Timeout
	if timeout <= 0 {
		timeout = s.timeout()
	}
	callCtx, cancel := toolrouter.WithToolTimeout(withCredential(ctx, req.Credential), timeout)
	defer cancel()
	c := &toolCall{req: req, relay: req.Relay, fresh: true}
	if req.Tool.Idempotent {
		c.retries = req.Tool.Retries
	}
	stop, err := s.setParams(c)
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryParse, "%v", err)
	}
	defer stop()
	for {
		out, again, err := s.attempt(callCtx, c)
		if err != nil && callCtx.Err() != nil {
			out = toolrouter.ContextOutcome(ctx, callCtx, timeout)
		} else if again {
			continue
		}
		out.Attempts = c.attempts
		out.MCPResult = gatewayUIResult(s.name, out.MCPResult)
		return out
	}
}

// toolCall is one call: what it sends, what it has tried so far, and
// what it may try again.
type toolCall struct {
	req    toolrouter.ExecRequest
	relay  *toolrouter.Relay // the /mcp caller's, or nil
	params *mcp.CallToolParams

	attempts int    // tools/call requests sent
	fresh    bool   // a new session is left for a call the server never ran
	retries  int    // resends left of an idempotent call that may have run
	after    uint64 // connection attempts finished when a session was given up
	// asked: the call waits for a connection attempt begun after it, whose
	// error (when it fails) is the call's answer.
	asked bool
}

// attempt sends the call once, on the live session (or one newer than the
// session given up last). again says the call should be sent again; err,
// when not nil, is why it failed (the outcome is then the context's when
// the call's context is done).
func (s *server) attempt(ctx context.Context, c *toolCall) (out toolrouter.Outcome, again bool, err error) {
	if key := userKey(c.req.Credential); key != "" {
		return s.userAttempt(ctx, c, key)
	}
	cs, gen, err := s.awaitSession(ctx, c.after)
	if err != nil && !c.asked && ctx.Err() == nil && s.ctx.Err() == nil {
		// The server was down at the last attempt, made before this
		// call: one attempt now.
		c.asked = true
		c.after = s.askAttempt()
		return out, true, nil
	}
	if err != nil {
		return s.unavailable(err), false, err
	}
	c.attempts++
	out, err = s.send(ctx, cs, c)
	if err == nil || ctx.Err() != nil {
		return out, false, err
	}
	out, again = s.failed(gen, err, c)
	return out, again, err
}

// setParams makes c's tools/call params: its arguments, and what the
// caller's relay carries (progress, log level, retry state). stop ends the
// progress watch.
func (s *server) setParams(c *toolCall) (stop func(), err error) {
	args := c.req.Args
	if args == nil {
		args = map[string]any{}
	}
	params := &mcp.CallToolParams{Name: c.req.Tool.MCPTool, Arguments: args}
	c.params, stop = params, func() {}
	relay := c.relay
	if progress := progressFunc(c.req.Progress, relay); progress != nil {
		var token string
		token, stop = s.m.watchProgress(progress)
		params.SetProgressToken(token)
	}
	if relay == nil {
		return stop, nil
	}
	if err := retryParams(params, relay); err != nil {
		stop()
		return nil, err
	}
	if relay.Log != nil {
		// The caller's own level filters what it gets (the /mcp session's,
		// or its request's); ask the server for everything. Servers on
		// protocol 2026-07-28 read the level from the request's _meta,
		// older ones from the session's logging/setLevel (see connect).
		params.Meta[metaLogLevel] = "debug"
	}
	return stop, nil
}

// send sends c on cs: on the hot path when it serves the session
// (fastcall.go), else through the SDK.
func (s *server) send(ctx context.Context, cs *mcp.ClientSession, c *toolCall) (out toolrouter.Outcome, err error) {
	req, params, relay := c.req, c.params, c.relay
	if relay != nil && relay.Log != nil {
		ctx = withCallRelay(ctx, relay)
	}
	if relay != nil && relay.ClientCapabilities != nil && modern(cs) {
		// The caller's capabilities, not toolrouterd's: the backend asks
		// for the input the caller can give.
		params.Meta[mcp.MetaKeyClientCapabilities] = relay.ClientCapabilities
		if declaresTasks(relay.ClientCapabilities) {
			// The backend may answer with a task (tasks.go): its answer's
			// bytes are kept to read the task from.
			capture := &taskCapture{}
			ctx = withTaskCapture(ctx, capture)
			defer func() {
				if t := capture.task(); t != nil {
					t.Server = s.name
					out, err = createdTaskOutcome(t), nil
				}
			}()
		}
	}
	if s.fast(cs) {
		// The hot path encodes with encoding/json, as the router encoded
		// ArgsJSON: the same bytes, without encoding the map again. (The
		// SDK's encoder does not escape HTML, so its path keeps the map.)
		args := params.Arguments
		if req.ArgsJSON != nil {
			params.Arguments = req.ArgsJSON
		}
		defer func() { params.Arguments = args }()
		return s.fastCall(ctx, cs, req.Tool, params)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return toolrouter.Outcome{}, err
	}
	return outcome(req.Tool, res), nil
}

// retryParams puts what the relay carries for the backend into a call's
// params: the caller's inputResponses and the backend's requestState.
func retryParams(params *mcp.CallToolParams, relay *toolrouter.Relay) error {
	if params.Meta == nil {
		params.Meta = mcp.Meta{}
	}
	params.RequestState = relay.RequestState
	if len(relay.InputResponses) == 0 {
		return nil
	}
	var responses mcp.InputResponseMap
	if err := json.Unmarshal(relay.InputResponses, &responses); err != nil {
		return fmt.Errorf("inputResponses: %w", err)
	}
	params.InputResponses = responses
	return nil
}

// modern reports whether cs speaks protocol 2026-07-28 or later, whose
// requests carry the client's capabilities in their _meta.
func modern(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// metaLogLevel is the _meta key of a request's log level (protocol
// 2026-07-28).
const metaLogLevel = "io.modelcontextprotocol/logLevel"

// progressFunc is the func that receives a call's progress: the route's
// (SSE updates of /route) and the relay's (an /mcp caller), either or both.
func progressFunc(route func(progress, total float64, message string), relay *toolrouter.Relay) func(progress, total float64, message string) {
	var fns []func(progress, total float64, message string)
	if route != nil {
		fns = append(fns, route)
	}
	if relay != nil && relay.Progress != nil {
		fns = append(fns, relay.Progress)
	}
	switch len(fns) {
	case 0:
		return nil
	case 1:
		return fns[0]
	}
	return func(progress, total float64, message string) {
		for _, fn := range fns {
			fn(progress, total, message)
		}
	}
}
