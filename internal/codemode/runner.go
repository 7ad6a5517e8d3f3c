package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Router routes one call through the whole pipeline (router.Router).
type Router interface {
	Do(ctx context.Context, req *toolrouter.CallRequest) (*toolrouter.Result, error)
}

// Limiter counts tool calls against the client's rate limit (the
// service's audit.Limiter, as /runs counts its calls).
type Limiter interface {
	Take(ctx context.Context, c *access.Client, calls toolrouter.Calls) (access.Verdict, error)
}

// Results reads a call's stored result as its client may
// (approval.Keeper.Result): a held call's, once decided.
type Results interface {
	Result(ctx context.Context, toolCallID, owner string) (*toolrouter.Result, error)
}

// Runner runs execute_code calls (router.CodeRunner): the program in
// the engine, each of its tool calls a call of its own through the
// router, in the execute_code call's view, plan and entry point, with
// its tc_ id as parent (audit records, traces).
type Runner struct {
	Engine *Engine
	// Limiter, when set, counts each inner call (nil: not counted).
	Limiter Limiter
	// Results, when set, lets a program run again after an approval use
	// the approved call's result instead of holding a new one.
	Results Results

	router Router
	held   heldCalls
}

// Bind sets the router the inner calls go through (the router is built
// with the runner, so after it).
func (r *Runner) Bind(rt Router) { r.router = rt }

// RunCode runs the program of req, an execute_code call.
func (r *Runner) RunCode(ctx context.Context, req *toolrouter.CallRequest) toolrouter.Outcome {
	code, ok := req.Call.Arguments["code"].(string)
	if !ok || strings.TrimSpace(code) == "" {
		return toolrouter.Failure(toolrouter.CategorySchema, "execute_code: code must be a non-empty string: the program, JavaScript")
	}
	if r.router == nil || req.View == nil {
		return toolrouter.Failure(toolrouter.CategoryResource, "execute_code unavailable: code mode is not enabled")
	}
	names := req.View.Callable(ctx)
	in := &inner{r: r, parent: req, client: access.FromContext(ctx)}
	res, err := r.Engine.Run(ctx, code, names, in)
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryTimeout, "execute_code: %v", err)
	}
	b, err := Marshal(res)
	if err != nil {
		return toolrouter.Failure(toolrouter.CategoryExecution, "execute_code: encode the result: %v", err)
	}
	if res.Error != nil {
		// The whole result (logs, calls, error with line and column),
		// for the model to read as a failed call's message.
		return toolrouter.Outcome{Err: string(b), Category: category(res.Error.Kind), Answered: true}
	}
	return toolrouter.Outcome{Output: b, Answered: true}
}

// category is the error category of an execution that ended with an
// error of kind.
func category(kind string) toolrouter.ErrorCategory {
	switch kind {
	case KindSyntax:
		return toolrouter.CategorySchema
	case KindTimeout, KindCPU:
		return toolrouter.CategoryTimeout
	case KindMemory, KindCalls, KindOutput, KindRateLimited:
		return toolrouter.CategoryResource
	case KindRefused:
		return toolrouter.CategoryPermission
	}
	return toolrouter.CategoryExecution
}

// KindRateLimited is an execution stopped by the client's rate limit.
const KindRateLimited = "rate_limited"

// inner makes the tool calls of one execution.
type inner struct {
	r      *Runner
	parent *toolrouter.CallRequest
	client *access.Client
}

func (in *inner) Call(ctx context.Context, name string, args map[string]any) Reply {
	p := in.parent
	key, hasKey := heldKey(in.client.LabelName(), p.View, name, args)
	if hasKey {
		if id, ok := in.r.held.get(key); ok {
			if rep, done := in.settled(ctx, name, key, id); done {
				return rep
			}
		}
	}
	if in.r.Limiter != nil {
		v, err := in.r.Limiter.Take(ctx, in.client, toolrouter.Calls{N: 1, Entry: p.EntryPoint(), View: p.View, Names: func() []string { return []string{name} }})
		if err != nil {
			return Reply{Stop: &Error{Kind: KindRateLimited, Tool: name, Message: "rate limiter unavailable; retry later"}}
		}
		if !v.Allowed {
			return Reply{Stop: &Error{Kind: KindRateLimited, Tool: name, Message: v.Message(in.client.LabelName())}}
		}
	}
	// Not the parent's own output budget (a /runs model's share of its
	// context window): that one is for what the program returns; an
	// inner call's output is fit to its tool's and the view's budgets.
	sub := &toolrouter.CallRequest{PlanID: p.PlanID, Call: toolrouter.Call{ToolName: name, Arguments: args, Format: p.Call.Format},
		View: p.View, RunID: p.RunID, Entry: p.EntryPoint(), Parent: p.ID}
	res, err := in.r.router.Do(ctx, sub)
	if err != nil {
		return Reply{Stop: &Error{Kind: KindException, Tool: name, Message: fmt.Sprintf("tools.%s could not be called: %v", name, err)}}
	}
	if res.Status == toolrouter.ResultAwaitingApproval {
		if hasKey {
			in.r.held.put(key, res.ToolCallID)
		}
		return Reply{ToolCallID: res.ToolCallID, Stop: heldError(name, res)}
	}
	return reply(name, res)
}

// settled is the reply to a call the program made before, that was held:
// its result once decided (done), or the program stopped again while it
// waits; not done when its result is gone (the call is made again).
func (in *inner) settled(ctx context.Context, name, key, id string) (Reply, bool) {
	if in.r.Results == nil {
		return Reply{}, false
	}
	res, err := in.r.Results.Result(ctx, id, "")
	if err != nil {
		in.r.held.drop(key)
		return Reply{}, false
	}
	if res.Status == toolrouter.ResultAwaitingApproval {
		return Reply{ToolCallID: id, Stop: heldError(name, res)}, true
	}
	in.r.held.drop(key) // used once: a later run calls the tool again
	return reply(name, res), true
}

func heldError(name string, res *toolrouter.Result) *Error {
	return &Error{Kind: KindHeld, Tool: name, ToolCallID: res.ToolCallID, ApprovalID: res.ApprovalID,
		Message: fmt.Sprintf("tools.%s waits for an approver (approval %s, call %s): the program stopped there; run it again once the call is approved, and that call's approved result is used", name, res.ApprovalID, res.ToolCallID)}
}

// reply is what the program gets of a finished call.
func reply(name string, res *toolrouter.Result) Reply {
	if res.Success {
		return Reply{Output: res.Output, ToolCallID: res.ToolCallID}
	}
	msg := "failed"
	if res.Error != nil {
		msg = *res.Error
	}
	if res.ErrorCategory != nil {
		switch *res.ErrorCategory {
		case toolrouter.CategoryNotFound, toolrouter.CategoryPermission:
			return Reply{ToolCallID: res.ToolCallID, Stop: &Error{Kind: KindRefused, Tool: name, ToolCallID: res.ToolCallID,
				Message: fmt.Sprintf("tools.%s was refused: %s", name, msg)}}
		}
	}
	return Reply{ToolCallID: res.ToolCallID, Err: msg}
}

// heldKey names a call of a program across its runs: its client, view,
// tool and arguments.
func heldKey(client string, view toolrouter.View, name string, args map[string]any) (string, bool) {
	_, sum, err := toolrouter.CanonicalArguments(args)
	if err != nil {
		return "", false
	}
	v := ""
	if n, ok := view.(interface{ ViewName() string }); ok {
		v = n.ViewName()
	}
	return client + "\x00" + v + "\x00" + name + "\x00" + sum, true
}

// heldCalls remembers the calls programs made that were held, so that
// the program run again after the approval gets the approved call's
// result (once) instead of holding a new call. Kept in this replica
// for heldTTL, at most maxHeld.
type heldCalls struct {
	mu sync.Mutex
	m  map[string]heldCall
}

type heldCall struct {
	id string
	at time.Time
}

const (
	heldTTL = 24 * time.Hour
	maxHeld = 10000
)

func (h *heldCalls) get(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.m[key]
	if !ok || time.Since(c.at) > heldTTL {
		delete(h.m, key)
		return "", false
	}
	return c.id, true
}

func (h *heldCalls) put(key, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]heldCall{}
	}
	if len(h.m) >= maxHeld {
		for k, c := range h.m { // drop the expired, else any one
			if time.Since(c.at) > heldTTL || len(h.m) >= maxHeld {
				delete(h.m, k)
			}
			if len(h.m) < maxHeld {
				break
			}
		}
	}
	h.m[key] = heldCall{id: id, at: time.Now()}
}

func (h *heldCalls) drop(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
}

// Marshal is json.Marshal without HTML escaping: what a model reads
// (signatures' Promise<…>, a program's answer) as written.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
