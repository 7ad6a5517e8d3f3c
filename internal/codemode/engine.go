// Package codemode runs the programs of discovery: code (docs/code-mode.md):
// a short JavaScript program the model writes, in a sandboxed
// interpreter (github.com/dop251/goja) that sees one object, tools, with
// an async function per tool the caller may use, and console.log. Each
// tool call the program makes goes back through the whole call pipeline
// as a call of its own (Runner); the engine only runs the program within
// its bounds: wall time, CPU time, tool calls, memory, output size.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Limits bound one execution (docs/code-mode.md "Bounds").
type Limits struct {
	// Timeout is the wall time of one execution, tool calls included.
	Timeout time.Duration
	// CPU is the time the program itself may run, tool calls excluded.
	CPU time.Duration
	// MaxCalls is the tool calls one execution may make.
	MaxCalls int
	// MaxHeapBytes is how much the process's live heap may grow while
	// the execution runs before it is interrupted.
	MaxHeapBytes uint64
	// MaxOutputBytes bounds what an execution returns: its value and its
	// console.log lines together.
	MaxOutputBytes int
	// MaxCodeBytes bounds the program's source.
	MaxCodeBytes int
	// MaxStringBytes and MaxArrayLength bound the strings and arrays the
	// builtins that build them in one step (repeat, padStart, fill,
	// join…) may make or walk: their loops run outside the interpreter's
	// reach of an interrupt.
	MaxStringBytes int
	MaxArrayLength int
}

// DefaultLimits are the limits of the settings' defaults.
func DefaultLimits() Limits {
	return Limits{Timeout: 30 * time.Second, CPU: 5 * time.Second, MaxCalls: 50, MaxHeapBytes: 64 << 20,
		MaxOutputBytes: 256 << 10, MaxCodeBytes: 64 << 10, MaxStringBytes: 8 << 20, MaxArrayLength: 1 << 20}
}

// Reply is what one tool call gave the program.
type Reply struct {
	// Output is the tool's JSON output on success.
	Output json.RawMessage
	// Err is why the call failed ("" on success): the program sees it as
	// a rejected promise it may catch.
	Err string
	// Stop, when set, ends the program with it: a call the caller may
	// not make, or one held for an approver.
	Stop *Error
	// ToolCallID is the call's tc_ id.
	ToolCallID string
}

// Caller makes the tool calls of one execution.
type Caller interface {
	Call(ctx context.Context, name string, args map[string]any) Reply
}

// Kinds of Error.
const (
	KindSyntax    = "syntax_error"
	KindException = "exception"
	KindTimeout   = "timeout"
	KindCPU       = "cpu_limit"
	KindMemory    = "memory_limit"
	KindCalls     = "call_limit"
	KindOutput    = "output_limit"
	KindRefused   = "refused"
	KindHeld      = "awaiting_approval"
	KindUnsettled = "unsettled"
)

// Error is why a program did not give an answer, for the model to read.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	// Tool and ToolCallID name the call that stopped the program
	// (refused, held).
	Tool       string `json:"tool,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
}

func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// CallLog is one tool call a program made.
type CallLog struct {
	Tool       string `json:"tool"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	OK         bool   `json:"ok"`
}

// Result is what one execution gave.
type Result struct {
	// Value is the program's return value as JSON (null when it returned
	// nothing); nil when Error is set.
	Value json.RawMessage `json:"result,omitempty"`
	Logs  []string        `json:"logs,omitempty"`
	Calls []CallLog       `json:"calls"`
	Error *Error          `json:"error,omitempty"`
	// LogsTruncated reports console.log output cut at the output limit.
	LogsTruncated bool `json:"logs_truncated,omitempty"`
}

// Engine runs programs within its limits, at most a few at a time.
type Engine struct {
	limits Limits
	slots  chan struct{}
}

// NewEngine returns an engine running at most concurrent programs at
// once (each within l); the others wait for a slot.
func NewEngine(l Limits, concurrent int) *Engine {
	return &Engine{limits: l, slots: make(chan struct{}, max(concurrent, 1))}
}

// Limits are the engine's limits.
func (e *Engine) Limits() Limits { return e.limits }

// wrapLine is the line the program starts on in the source run.
const wrapLine = 2

// Run runs code with the tools names (each callable through call).
// Every way a program ends is a Result; err is only the context's.
func (e *Engine) Run(ctx context.Context, code string, names []string, call Caller) (*Result, error) {
	if len(code) > e.limits.MaxCodeBytes {
		return &Result{Calls: []CallLog{}, Error: &Error{Kind: KindSyntax, Message: fmt.Sprintf("the program is %d bytes, over the limit of %d", len(code), e.limits.MaxCodeBytes)}}, nil
	}
	src := "(async () => {\n" + code + "\n})()"
	ast, err := parser.ParseFile(nil, "program.js", src, 0)
	if err != nil {
		return &Result{Calls: []CallLog{}, Error: syntaxError(err)}, nil
	}
	prg, err := goja.CompileAST(ast, true)
	if err != nil {
		return &Result{Calls: []CallLog{}, Error: syntaxError(err)}, nil
	}
	// The time limit counts the wait for a slot too: a program never
	// waits longer than it may run.
	ctx, cancel := context.WithTimeout(ctx, e.limits.Timeout)
	defer cancel()
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	case <-ctx.Done():
		return &Result{Calls: []CallLog{}, Error: &Error{Kind: KindTimeout,
			Message: fmt.Sprintf("no program slot was free within the time limit of %s (TOOLROUTER_CODE_CONCURRENCY programs run at once); retry later", e.limits.Timeout)}}, nil
	}
	x := &execution{limits: e.limits, call: call, ctx: ctx, res: &Result{Calls: []CallLog{}}}
	return x.run(prg, names), nil
}

// execution is one program's run.
type execution struct {
	limits Limits
	call   Caller
	ctx    context.Context
	vm     *goja.Runtime
	res    *Result
	logged int

	mu      sync.Mutex
	inCall  time.Time     // when the call under way started (zero: none)
	callDur time.Duration // time spent in calls so far
	stopped *Error        // why the program was interrupted
	// stringify and parse are the runtime's JSON functions, taken before
	// the program runs (it may replace the globals).
	stringify, parse goja.Callable
}

func (x *execution) interrupt(e *Error) {
	x.mu.Lock()
	if x.stopped == nil {
		x.stopped = e
	}
	x.mu.Unlock()
	x.vm.Interrupt(e)
}

func (x *execution) run(prg *goja.Program, names []string) *Result {
	x.vm = goja.New()
	x.vm.SetMaxCallStackSize(1000)
	if err := x.sandbox(names); err != nil {
		x.res.Error = &Error{Kind: KindException, Message: "sandbox: " + err.Error()}
		return x.res
	}
	start := time.Now()
	done := make(chan struct{})
	defer close(done)
	go x.watch(start, done)

	v, err := x.vm.RunProgram(prg)
	x.mu.Lock()
	stopped := x.stopped
	x.mu.Unlock()
	switch {
	case stopped != nil:
		x.res.Error = stopped
		return x.res
	case err != nil:
		x.res.Error = exception(err)
		return x.res
	}
	p, ok := v.Export().(*goja.Promise)
	if !ok {
		x.res.Error = &Error{Kind: KindException, Message: "the program did not run as an async function"}
		return x.res
	}
	switch p.State() {
	case goja.PromiseStateRejected:
		x.res.Error = rejection(p.Result())
	case goja.PromiseStatePending:
		x.res.Error = &Error{Kind: KindUnsettled, Message: "the program awaited something that never settles (there are no timers; await the tools' promises)"}
	default:
		x.result(p.Result())
	}
	return x.res
}

// result sets the program's value, if it fits the output limit.
func (x *execution) result(v goja.Value) {
	if v == nil || goja.IsUndefined(v) {
		x.res.Value = json.RawMessage("null")
		return
	}
	if str, ok := v.(goja.String); ok && str.Length()+x.logged > x.limits.MaxOutputBytes {
		// Refused before it is encoded: no copy of a string too long.
		x.res.Error = &Error{Kind: KindOutput, Message: fmt.Sprintf("the program returned a string of %d characters, over the limit of %d bytes: return less (filter, count, summarise)", str.Length(), x.limits.MaxOutputBytes)}
		return
	}
	s, err := x.stringify(goja.Undefined(), v)
	if err != nil {
		x.res.Error = exception(err)
		return
	}
	if goja.IsUndefined(s) { // a function, a symbol
		x.res.Value = json.RawMessage("null")
		return
	}
	str := s.String()
	if len(str)+x.logged > x.limits.MaxOutputBytes {
		x.res.Error = &Error{Kind: KindOutput, Message: fmt.Sprintf("the program returned %d bytes (with %d of console.log), over the limit of %d: return less (filter, count, summarise)", len(str), x.logged, x.limits.MaxOutputBytes)}
		return
	}
	x.res.Value = json.RawMessage(str)
}

// watch interrupts the program at its deadline, over its CPU time or
// its heap growth, until done.
func (x *execution) watch(start time.Time, done <-chan struct{}) {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	for {
		select {
		case <-done:
			return
		case <-x.ctx.Done():
			if errors.Is(x.ctx.Err(), context.DeadlineExceeded) {
				x.interrupt(&Error{Kind: KindTimeout, Message: fmt.Sprintf("the program ran past its time limit of %s and was stopped", x.limits.Timeout)})
			} else {
				x.interrupt(&Error{Kind: KindTimeout, Message: "the request was cancelled"})
			}
			return
		case now := <-t.C:
			x.mu.Lock()
			cpu := now.Sub(start) - x.callDur
			if !x.inCall.IsZero() {
				cpu -= now.Sub(x.inCall)
			}
			x.mu.Unlock()
			if cpu > x.limits.CPU {
				x.interrupt(&Error{Kind: KindCPU, Message: fmt.Sprintf("the program computed for more than its CPU limit of %s and was stopped (an endless loop?)", x.limits.CPU)})
				return
			}
			metrics.Read(sample)
			// Growth over the lowest heap seen while the program runs: the
			// heap at its start may hold garbage a collection frees while
			// the program allocates.
			used := sample[0].Value.Uint64()
			base = min(base, used)
			if used-base > x.limits.MaxHeapBytes {
				x.interrupt(&Error{Kind: KindMemory, Message: fmt.Sprintf("the program allocated more than its memory limit of %d MiB and was stopped", x.limits.MaxHeapBytes>>20)})
				return
			}
		}
	}
}

// syntaxError is a parse or compile error with its line and column in
// the program as the model wrote it.
func syntaxError(err error) *Error {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		p := list[0].Position
		return &Error{Kind: KindSyntax, Message: list[0].Message, Line: max(p.Line-wrapLine+1, 1), Column: p.Column}
	}
	var one *parser.Error
	if errors.As(err, &one) {
		return &Error{Kind: KindSyntax, Message: one.Message, Line: max(one.Position.Line-wrapLine+1, 1), Column: one.Position.Column}
	}
	var ce *goja.CompilerSyntaxError
	if errors.As(err, &ce) {
		return &Error{Kind: KindSyntax, Message: ce.Message}
	}
	return &Error{Kind: KindSyntax, Message: err.Error()}
}

// exception is an error a run ended with: a thrown value, a stack
// overflow.
func exception(err error) *Error {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		e := &Error{Kind: KindException, Message: clean(ex.Value().String())}
		where(e, ex.Stack())
		return e
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return &Error{Kind: KindException, Message: "RangeError: maximum call stack size exceeded"}
	}
	return &Error{Kind: KindException, Message: err.Error()}
}

// rejection is the error of a program whose promise was rejected: what
// it threw.
func rejection(v goja.Value) *Error {
	e := &Error{Kind: KindException, Message: "uncaught exception"}
	if v == nil {
		return e
	}
	e.Message = clean(v.String())
	if o, ok := v.(*goja.Object); ok {
		if s := o.Get("stack"); s != nil && !goja.IsUndefined(s) {
			lineCol(e, s.String())
		}
	}
	return e
}

// where sets e's line and column from the first frame in the program.
func where(e *Error, stack []goja.StackFrame) {
	for _, f := range stack {
		if p := f.Position(); p.Line > 0 && f.SrcName() == "program.js" {
			e.Line, e.Column = max(p.Line-wrapLine+1, 1), p.Column
			return
		}
	}
}

// lineCol reads "program.js:L:C" from a stack text.
func lineCol(e *Error, stack string) {
	i := strings.Index(stack, "program.js:")
	if i < 0 {
		return
	}
	var l, c int
	if n, _ := fmt.Sscanf(stack[i+len("program.js:"):], "%d:%d", &l, &c); n == 2 {
		e.Line, e.Column = max(l-wrapLine+1, 1), c
	}
}

// clean cuts from a message what the runtime could not print of a value
// (a Go formatting verb's panic text, with host addresses in it).
func clean(msg string) string {
	if i := strings.Index(msg, "%!"); i >= 0 {
		return msg[:i] + "(a value that cannot be shown)"
	}
	return msg
}
