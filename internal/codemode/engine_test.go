package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// fakeCaller answers each tool by a function of its arguments.
type fakeCaller struct {
	tools map[string]func(args map[string]any) Reply
	calls []string
}

func (f *fakeCaller) Call(ctx context.Context, name string, args map[string]any) Reply {
	f.calls = append(f.calls, name)
	fn, ok := f.tools[name]
	if !ok {
		return Reply{Stop: &Error{Kind: KindRefused, Tool: name, Message: "no such tool"}}
	}
	return fn(args)
}

func jsonReply(v any) Reply {
	b, _ := json.Marshal(v)
	return Reply{Output: b, ToolCallID: "tc_1"}
}

func testLimits() Limits {
	l := DefaultLimits()
	l.Timeout, l.CPU = 5*time.Second, 300*time.Millisecond
	return l
}

func run(t *testing.T, l Limits, code string, f *fakeCaller) *Result {
	t.Helper()
	if f == nil {
		f = &fakeCaller{}
	}
	names := make([]string, 0, len(f.tools))
	for n := range f.tools {
		names = append(names, n)
	}
	res, err := NewEngine(l, 2).Run(context.Background(), code, names, f)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func issues() *fakeCaller {
	return &fakeCaller{tools: map[string]func(map[string]any) Reply{
		"list_issues": func(map[string]any) Reply {
			var out []map[string]any
			for i := range 50 {
				out = append(out, map[string]any{"id": i, "open": i%3 == 0, "title": fmt.Sprintf("issue %d", i)})
			}
			return jsonReply(out)
		},
		"get_issue": func(a map[string]any) Reply {
			return jsonReply(map[string]any{"id": a["id"], "comments": 2})
		},
		"fails": func(map[string]any) Reply { return Reply{Err: "backend said no", ToolCallID: "tc_9"} },
	}}
}

func TestChainReturnsOneAnswer(t *testing.T) {
	f := issues()
	res := run(t, testLimits(), `
const all = await tools.list_issues({});
const open = all.filter(i => i.open).slice(0, 3);
const got = await Promise.all(open.map(i => tools.get_issue({id: i.id})));
console.log("fetched", got.length, {n: 1});
return got.reduce((s, g) => s + g.comments, 0);`, f)
	if res.Error != nil {
		t.Fatalf("error: %+v", res.Error)
	}
	if string(res.Value) != "6" || len(res.Calls) != 4 || len(res.Logs) != 1 || res.Logs[0] != `fetched 3 {"n":1}` {
		t.Fatalf("got value %s, calls %v, logs %q", res.Value, res.Calls, res.Logs)
	}
}

func TestErrorsTheModelCanRead(t *testing.T) {
	for _, tc := range []struct {
		name, code, kind, msg string
		line, col             int
	}{
		{"syntax", "const a = 1;\nconst b = ;", KindSyntax, "Unexpected token", 2, 11},
		{"thrown", "const a = 1;\n\nthrow new Error('boom');", KindException, "boom", 3, 0},
		{"uncaught tool failure", "await tools.fails({});", KindException, "backend said no", 1, 0},
		{"refused", "await tools.not_yours({});", KindRefused, "no such tool", 0, 0},
		{"not a function", "tools.list_issues = 1; return 2;", KindException, "TypeError", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := issues()
			f.tools["not_yours"] = func(map[string]any) Reply {
				return Reply{Stop: &Error{Kind: KindRefused, Tool: "not_yours", Message: "no such tool"}}
			}
			res := run(t, testLimits(), tc.code, f)
			if res.Error == nil || res.Error.Kind != tc.kind || !strings.Contains(res.Error.Message, tc.msg) {
				t.Fatalf("error %+v, want kind %s with %q", res.Error, tc.kind, tc.msg)
			}
			if tc.line != 0 && res.Error.Line != tc.line {
				t.Fatalf("line %d, want %d (%+v)", res.Error.Line, tc.line, res.Error)
			}
			if tc.col != 0 && res.Error.Column != tc.col {
				t.Fatalf("column %d, want %d", res.Error.Column, tc.col)
			}
		})
	}
}

// TestToolsIsNoThenable: awaiting tools, encoding it or printing it calls
// no tool.
func TestToolsIsNoThenable(t *testing.T) {
	f := issues()
	res := run(t, testLimits(), "const x = await tools; console.log(tools); return [typeof tools.then, JSON.stringify(tools), x === tools];", f)
	if res.Error != nil || string(res.Value) != `["undefined","{}",true]` || len(f.calls) != 0 {
		t.Fatalf("got %s %+v, calls %v", res.Value, res.Error, f.calls)
	}
}

func TestToolFailureIsCatchable(t *testing.T) {
	res := run(t, testLimits(), `try { await tools.fails({}); } catch (e) { return e.message + " " + e.tool + " " + e.toolCallId; }`, issues())
	if res.Error != nil || string(res.Value) != `"tools.fails failed: backend said no fails tc_9"` {
		t.Fatalf("got %s %+v", res.Value, res.Error)
	}
}

func TestBounds(t *testing.T) {
	l := testLimits()
	l.MaxCalls = 3
	l.MaxOutputBytes = 1 << 20
	for _, tc := range []struct {
		name, code, kind string
		limits           func(*Limits)
	}{
		{"endless loop", "while (true) {}", KindCPU, nil},
		{"endless loop caught", "for (;;) { try { while (true) {} } catch (e) {} }", KindCPU, nil},
		{"wall time", "while (true) {}", KindTimeout, func(l *Limits) { l.CPU, l.Timeout = time.Minute, 200*time.Millisecond }},
		{"calls", "for (let i = 0; i < 10; i++) await tools.get_issue({id: i});", KindCalls, nil},
		{"output", "let s = 'x'; while (s.length < 4e6) s += s; return s;", KindOutput, func(l *Limits) { l.MaxHeapBytes, l.CPU = 1<<30, 20*time.Second }},
		{"memory", "const a = []; for (;;) a.push({k: 'v' + a.length, n: [1, 2, 3]});", KindMemory, func(l *Limits) { l.CPU, l.MaxHeapBytes = 20*time.Second, 8<<20 }},
		{"memory strings", "const a = []; let s = 'y'.repeat(1 << 20); for (;;) a.push(s + a.length);", KindMemory, func(l *Limits) { l.CPU = 20 * time.Second }},
		{"big repeat", "return 'x'.repeat(1e9).length;", KindException, nil},
		{"big fill", "const a = []; a.length = 1e9; a.fill(0); return 1;", KindException, nil},
		{"recursion", "const f = (n) => f(n + 1) + 1; return f(0);", KindException, nil},
		{"never settles", "await new Promise(() => {});", KindUnsettled, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := l
			if tc.limits != nil {
				tc.limits(&l)
			}
			start := time.Now()
			res := run(t, l, tc.code, issues())
			if res.Error == nil || res.Error.Kind != tc.kind {
				t.Fatalf("error %+v, want kind %s", res.Error, tc.kind)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %s", d)
			}
		})
	}
}

// TestMemoryBounded runs an unbounded allocation and checks the process
// heap stayed within a few times the limit.
func TestMemoryBounded(t *testing.T) {
	for _, garbage := range []int{0, 128} {
		t.Run(fmt.Sprintf("%d MiB of garbage at the start", garbage), func(t *testing.T) { memoryBounded(t, garbage) })
	}
}

// memoryBounded runs the unbounded allocation with garbage MiB left for
// the collector at its start: a collection while the program runs frees
// it, which must not hide the program's growth.
func memoryBounded(t *testing.T, garbage int) {
	l := testLimits()
	l.CPU, l.MaxHeapBytes = 20*time.Second, 32<<20
	runtime.GC()
	junk := make([][]byte, garbage)
	for i := range junk {
		junk[i] = make([]byte, 1<<20)
	}
	junk = nil
	_ = junk
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	stop, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var p uint64
		for {
			metrics.Read(sample)
			p = max(p, sample[0].Value.Uint64())
			select {
			case <-stop:
				peak <- p
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	// Chunks made by concatenation (memmove), not repeat (a loop per
	// character): fast under the race detector too.
	res := run(t, l, "let s = 'z'; while (s.length < 65536) s += s; const a = []; for (;;) a.push(s + a.length);", issues())
	close(stop)
	p := <-peak
	if res.Error == nil || res.Error.Kind != KindMemory {
		t.Fatalf("error %+v", res.Error)
	}
	t.Logf("live heap peak: %d MiB over the %d MiB before, for a limit of %d MiB", (p-base)>>20, base>>20, l.MaxHeapBytes>>20)
	if p > base && p-base > 4*l.MaxHeapBytes {
		t.Fatalf("heap grew %d MiB for a limit of %d MiB", (p-base)>>20, l.MaxHeapBytes>>20)
	}
}

// blockingCaller holds every call until release is closed, telling
// started when one begins.
type blockingCaller struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingCaller) Call(ctx context.Context, name string, args map[string]any) Reply {
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return Reply{Output: json.RawMessage("1")}
}

// TestSlotWaitBounded: with every slot taken, a program waits no longer
// than its time limit, and says why.
func TestSlotWaitBounded(t *testing.T) {
	l := testLimits()
	e := NewEngine(l, 1)
	b := &blockingCaller{started: make(chan struct{}, 1), release: make(chan struct{})}
	first := make(chan *Result)
	go func() {
		res, _ := e.Run(context.Background(), "return await tools.slow({});", []string{"slow"}, b)
		first <- res
	}()
	<-b.started // the one slot is taken
	l2 := l
	l2.Timeout = 50 * time.Millisecond
	e2 := &Engine{limits: l2, slots: e.slots}
	res, err := e2.Run(context.Background(), "return 1;", nil, &fakeCaller{})
	if err != nil || res.Error == nil || res.Error.Kind != KindTimeout || !strings.Contains(res.Error.Message, "slot") {
		t.Fatalf("second program: %+v %v", res, err)
	}
	close(b.release)
	if r := <-first; r.Error != nil || string(r.Value) != "1" {
		t.Fatalf("first program: %+v", r)
	}
}
