package codemode

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// removed are the globals a program does not get: evaluation of source
// text, and the binary buffers whose constructors allocate any size in
// one step (and whose methods loop outside the interpreter).
var removed = []string{"eval", "ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics", "WeakRef", "FinalizationRegistry",
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
	"Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"}

// prelude hardens the runtime before the program runs: the Function
// constructors (reachable through any function's constructor) refuse to
// compile source text, and the builtins that build or walk a string or
// an array in one native loop, out of an interrupt's reach, refuse sizes
// over the limits.
const prelude = `(function (maxLen, maxStr) {
  "use strict";
  const apply = Reflect.apply, define = Object.defineProperty, getProto = Object.getPrototypeOf;
  const deny = function Function() { throw new EvalError("code generation from strings is disabled in code mode"); };
  define(deny, "prototype", { value: Function.prototype });
  for (const p of [getProto(function () {}), getProto(async function () {}), getProto(function* () {})]) {
    define(p, "constructor", { value: deny, writable: false, configurable: false });
  }
  define(globalThis, "Function", { value: deny, writable: false, configurable: false });
  const tooLong = (what, n, lim) => { throw new RangeError(what + ": " + n + " is over the code mode limit of " + lim); };
  const guard = (proto, name, check) => {
    const f = proto[name];
    if (typeof f !== "function") return;
    define(proto, name, { value: { [name](...a) { check(this, a); return apply(f, this, a); } }[name], writable: true, configurable: true });
  };
  const len = (o) => (o == null ? 0 : Number(o.length) || 0);
  for (const m of ["fill", "join", "includes", "indexOf", "lastIndexOf", "reverse", "copyWithin", "sort", "toSorted", "toReversed",
                   "splice", "toSpliced", "slice", "concat", "flat", "flatMap", "toString", "toLocaleString", "with", "at",
                   "map", "filter", "forEach", "reduce", "reduceRight", "some", "every", "find", "findIndex", "findLast", "findLastIndex"]) {
    guard(Array.prototype, m, (t) => { if (len(t) > maxLen) tooLong("array length", len(t), maxLen); });
  }
  guard(Array, "from", (t, a) => { if (len(a[0]) > maxLen) tooLong("array length", len(a[0]), maxLen); });
  const sp = String.prototype;
  guard(sp, "repeat", (t, a) => { const n = String(t).length * (Number(a[0]) || 0); if (n > maxStr) tooLong("string length", n, maxStr); });
  for (const m of ["padStart", "padEnd"]) guard(sp, m, (t, a) => { const n = Number(a[0]) || 0; if (n > maxStr) tooLong("string length", n, maxStr); });
  for (const m of ["replace", "replaceAll", "split", "normalize", "toUpperCase", "toLowerCase", "localeCompare"]) {
    guard(sp, m, (t) => { if (String(t).length > maxStr) tooLong("string length", String(t).length, maxStr); });
  }
})`

// sandbox makes the program's world: the hardened builtins, tools and
// console, and nothing else.
func (x *execution) sandbox(names []string) error {
	vm := x.vm
	g := vm.GlobalObject()
	for _, n := range removed {
		_ = g.Delete(n)
	}
	var ok bool
	jsonObj := g.Get("JSON").ToObject(vm)
	if x.stringify, ok = goja.AssertFunction(jsonObj.Get("stringify")); !ok {
		return fmt.Errorf("JSON.stringify is not a function")
	}
	if x.parse, ok = goja.AssertFunction(jsonObj.Get("parse")); !ok {
		return fmt.Errorf("JSON.parse is not a function")
	}
	errCtor := g.Get("Error").ToObject(vm)
	harden, err := vm.RunString(prelude)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	hf, _ := goja.AssertFunction(harden)
	if _, err := hf(goja.Undefined(), vm.ToValue(x.limits.MaxArrayLength), vm.ToValue(x.limits.MaxStringBytes)); err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	freeze, _ := goja.AssertFunction(g.Get("Object").ToObject(vm).Get("freeze"))
	mk, err := vm.RunString(makeTools)
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	mkf, _ := goja.AssertFunction(mk)
	list := make([]any, len(names))
	for i, n := range names {
		list[i] = n
	}
	tools, err := mkf(goja.Undefined(), vm.ToValue(x.invoke(errCtor)), vm.ToValue(list))
	if err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	console := vm.NewObject()
	log := vm.ToValue(x.log)
	for _, m := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(m, log); err != nil {
			return fmt.Errorf("console.%s: %w", m, err)
		}
	}
	if _, err := freeze(goja.Undefined(), console); err != nil {
		return fmt.Errorf("freeze console: %w", err)
	}
	for name, v := range map[string]goja.Value{"tools": tools, "console": console} {
		if err := g.DefineDataProperty(name, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			return fmt.Errorf("global %s: %w", name, err)
		}
	}
	return nil
}

// log is console.log: its arguments, strings as they are and other
// values as JSON, one line, kept while the output limit allows.
func (x *execution) log(fc goja.FunctionCall) goja.Value {
	parts := make([]string, 0, len(fc.Arguments))
	for _, a := range fc.Arguments {
		if s, ok := a.Export().(string); ok {
			parts = append(parts, s)
			continue
		}
		s, err := x.stringify(goja.Undefined(), a)
		if err != nil || goja.IsUndefined(s) {
			parts = append(parts, a.String())
			continue
		}
		parts = append(parts, s.String())
	}
	line := strings.Join(parts, " ")
	if x.res.LogsTruncated || x.logged+len(line) > x.limits.MaxOutputBytes/2 {
		x.res.LogsTruncated = true
		return goja.Undefined()
	}
	x.logged += len(line)
	x.res.Logs = append(x.res.Logs, line)
	return goja.Undefined()
}

// makeTools makes the program's tools: a function per name calling
// invoke (kept in the closure, out of the program's reach), frozen, behind
// a proxy that answers any other name with a function making that call
// too: the pipeline refuses a tool out of the caller's scope when it is
// called (a refusal the program stops on), as for a direct call, rather
// than the name being only absent. Nothing can be set, defined or
// deleted on it, nor its prototype changed.
const makeTools = `(function (invoke, names) {
  "use strict";
  const make = (n) => Object.freeze({ [n](args) { return invoke(n, args); } }[n]);
  const t = Object.create(null);
  for (const n of names) t[n] = make(n);
  Object.freeze(t);
  const no = () => false;
  // Names the runtime itself looks up (await, JSON.stringify, String())
  // are not taken for tools unless a tool has them.
  const runtime = new Set(["then", "toJSON", "constructor", "valueOf", "toString", "toLocaleString", "__proto__"]);
  return new Proxy(t, {
    get: (o, k) => (typeof k !== "string" ? undefined : Object.hasOwn(o, k) ? o[k] : runtime.has(k) ? undefined : make(k)),
    set: no, defineProperty: no, deleteProperty: no, setPrototypeOf: no,
  });
})`

// invoke is the function behind every tools[name]: its argument crosses
// as JSON text (no object of the program reaches Go, none of Go the
// program), the call is made, and its output crosses back as JSON.
func (x *execution) invoke(errCtor *goja.Object) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		vm := x.vm
		name := fc.Argument(0).String()
		fc.Arguments = fc.Arguments[1:]
		p, resolve, reject := vm.NewPromise()
		fail := func(msg, id string) goja.Value {
			e, err := vm.New(errCtor, vm.ToValue(msg))
			if err == nil {
				_ = e.Set("tool", name)
				if id != "" {
					_ = e.Set("toolCallId", id)
				}
				_ = reject(e)
			} else {
				_ = reject(vm.ToValue(msg))
			}
			return vm.ToValue(p)
		}
		args, err := x.args(fc.Argument(0))
		if err != nil {
			return fail(fmt.Sprintf("tools.%s: %v", name, err), "")
		}
		if len(x.res.Calls) >= x.limits.MaxCalls {
			x.interrupt(&Error{Kind: KindCalls, Tool: name, Message: fmt.Sprintf("the program made more than %d tool calls and was stopped", x.limits.MaxCalls)})
			return vm.ToValue(p)
		}
		x.mu.Lock()
		x.inCall = time.Now()
		x.mu.Unlock()
		rep := x.call.Call(x.ctx, name, args)
		x.mu.Lock()
		x.callDur += time.Since(x.inCall)
		x.inCall = time.Time{}
		x.mu.Unlock()
		x.res.Calls = append(x.res.Calls, CallLog{Tool: name, ToolCallID: rep.ToolCallID, OK: rep.Stop == nil && rep.Err == ""})
		switch {
		case rep.Stop != nil:
			x.interrupt(rep.Stop)
			return vm.ToValue(p)
		case rep.Err != "":
			return fail(fmt.Sprintf("tools.%s failed: %s", name, rep.Err), rep.ToolCallID)
		}
		out := rep.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		v, err := x.parse(goja.Undefined(), vm.ToValue(string(out)))
		if err != nil {
			return fail(fmt.Sprintf("tools.%s: its output is not JSON", name), rep.ToolCallID)
		}
		_ = resolve(v)
		return vm.ToValue(p)
	}
}

// args is a tool's argument as a JSON object (undefined: {}).
func (x *execution) args(v goja.Value) (map[string]any, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return map[string]any{}, nil
	}
	s, err := x.stringify(goja.Undefined(), v)
	if err != nil {
		return nil, fmt.Errorf("its argument cannot be sent as JSON: %s", err.Error())
	}
	if goja.IsUndefined(s) {
		return nil, fmt.Errorf("its argument must be an object")
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(s.String()), &args); err != nil || args == nil {
		return nil, fmt.Errorf("its argument must be an object of arguments")
	}
	return args, nil
}
