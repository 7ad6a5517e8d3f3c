package codemode

import (
	"strings"
	"testing"
	"time"
)

// TestSandboxEscapes runs the ways out of a sandbox a program might try:
// each must fail (an error, or a value saying the door is shut), and
// none may reach the host.
func TestSandboxEscapes(t *testing.T) {
	l := testLimits()
	l.Timeout = 2 * time.Second
	for _, tc := range []struct{ name, code string }{
		{"Function constructor", "return Function('return this')();"},
		{"constructor chain from a tool", "return tools.get_issue.constructor('return globalThis')();"},
		{"constructor chain from an arrow", "return (() => 1).constructor.constructor('return 1')();"},
		{"async function constructor", "return (async () => 1).constructor('return 1');"},
		{"generator constructor", "return (function* () {}).constructor('yield 1');"},
		{"eval", "return eval('1 + 1');"},
		{"indirect eval", "return (0, globalThis['ev' + 'al'])('1');"},
		{"require", "return require('fs');"},
		{"process", "return process.env;"},
		{"dynamic import", "return await import('fs');"},
		{"setTimeout", "setTimeout(() => {}, 10); return 1;"},
		{"setInterval", "setInterval(() => {}, 10); return 1;"},
		{"queueMicrotask to outlive", "queueMicrotask(() => { while (true) {} }); return 1;"},
		{"fetch", "return await fetch('http://example.com');"},
		{"XMLHttpRequest", "return new XMLHttpRequest();"},
		{"WebAssembly", "return WebAssembly.compile;"},
		{"ArrayBuffer", "return new ArrayBuffer(1e9).byteLength;"},
		{"typed array", "return new Uint8Array(1e9).length;"},
		{"add a tool", "tools.evil = () => 1; return tools.evil();"},
		{"replace a tool", "tools.get_issue = () => 'mine'; return tools.get_issue();"},
		{"prototype of tools", "Object.setPrototypeOf(tools, {x: 1}); return tools.x;"},
		{"__proto__ of tools", "tools.__proto__ = {x: () => 1}; return tools.x();"},
		{"define on tools", "Object.defineProperty(tools, 'evil', {value: 1}); return tools.evil;"},
		{"prototype of a tool", "tools.get_issue.call = () => 'x'; return tools.get_issue.call();"},
		{"redefine tools", "tools = {}; return 1;"},
		{"delete tools", "'use strict'; delete globalThis.tools; return typeof tools;"},
		{"Function.prototype.constructor rewrite", "Object.defineProperty(Function.prototype, 'constructor', {value: 1}); return 1;"},
		{"host objects in globals", "const host = Object.getOwnPropertyNames(globalThis).filter(n => !" + standardGlobals + ".includes(n)); if (host.length) return host; throw new Error('none');"},
		{"Go values through a tool", "const r = await tools.get_issue({id: 1}); if (Object.getPrototypeOf(r) !== Object.prototype) return 'host object'; throw new Error('plain');"},
		{"timers to outlive the deadline", "for (;;) await Promise.resolve();"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, l, tc.code, issues())
			if res.Error == nil {
				t.Fatalf("the escape worked: %s", res.Value)
			}
			t.Logf("%s: %s", res.Error.Kind, res.Error.Message)
			if strings.Contains(res.Error.Message, "sandbox:") || strings.Contains(res.Error.Message, "0x") {
				t.Fatalf("the sandbox broke: %+v", res.Error)
			}
		})
	}
}

// standardGlobals are the globals of ECMAScript the runtime may have,
// with the two of the sandbox.
const standardGlobals = `["globalThis","Object","Function","Array","String","Number","Boolean","Symbol","BigInt","Math","JSON","Date","RegExp",
"Error","EvalError","RangeError","ReferenceError","SyntaxError","TypeError","URIError","AggregateError","Promise","Proxy","Reflect",
"Map","Set","WeakMap","WeakSet","NaN","Infinity","undefined","isNaN","isFinite","parseInt","parseFloat",
"encodeURI","encodeURIComponent","decodeURI","decodeURIComponent","escape","unescape","GoError","tools","console"]`
