// Package guardrail runs the registry's guardrails (docs/trusting-tools.md "Trusting
// tools") around every tool call the router makes: webhooks called before
// a call (which may allow, deny or rewrite its arguments) and after it
// (which may allow, deny or rewrite its output), and the built-in
// redact_secrets, which replaces secrets in outputs by [REDACTED:kind].
package guardrail

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Guards holds the guardrails of the registry in force; the router asks it
// before and after every call. Its fields are set once.
type Guards struct {
	// Registry is the registry in force; its guardrails are compiled once
	// per registry (a reload makes a new one).
	Registry func() Registry
	// Client calls the webhooks (outbound transport, no redirects: see
	// NewClient).
	Client *http.Client

	cur atomic.Pointer[compiled]
}

// Registry is the registry in force (*registry.Registry): the guardrails
// its file declares. A new value is a reload.
type Registry interface {
	Guardrails() []toolrouter.Guardrail
}

// compiled is the set of a registry.
type compiled struct {
	reg Registry
	set *set
}

// set is the compiled guardrails of one registry, in file order.
type set struct {
	hooks         []*hook
	before, after bool // some hook has that phase
}

// hook is one compiled guardrail.
type hook struct {
	toolrouter.Guardrail
	tools, clients access.Scope
	before, after  bool
	redact         *redactor // the built-in redact_secrets; nil for a webhook
}

// Call is what the guardrails see of a call.
type Call struct {
	Client     string // "" for the caller of an open service
	Tool       *toolrouter.Tool
	Args       map[string]any
	PlanID     string
	ToolCallID string
}

// Verdict is what the guardrails of one phase made of a call.
type Verdict struct {
	// Decisions are the decisions of the guardrails that applied, in the
	// order they ran (the audit record's guardrails).
	Decisions []toolrouter.GuardrailDecision
	// Deny, when not "", refuses the call (category permission) with this
	// message, which the caller sees.
	Deny string
	// Args are the arguments a before-hook rewrote (nil: unchanged),
	// already checked against the tool's input schema.
	Args map[string]any
	// Changed says the after phase changed the output.
	Changed bool
	// Notes say what the after phase changed (the result's notes).
	Notes []string
}

// current is the compiled guardrails of the registry in force, compiled
// once per registry (two calls racing after a reload may both compile it).
func (g *Guards) current() *set {
	reg := g.Registry()
	if c := g.cur.Load(); c != nil && c.reg == reg {
		return c.set
	}
	c := &compiled{reg: reg, set: compile(reg.Guardrails())}
	g.cur.Store(c)
	return c.set
}

// compile compiles guardrails the registry validated.
func compile(gs []toolrouter.Guardrail) *set {
	s := &set{}
	for _, c := range gs {
		h := &hook{Guardrail: c, tools: access.NewScope(c.Tools), clients: access.NewScope(c.Clients)}
		h.before = c.Phase == toolrouter.PhaseBefore || c.Phase == toolrouter.PhaseBoth
		h.after = c.Phase == toolrouter.PhaseAfter || c.Phase == toolrouter.PhaseBoth
		if c.Builtin == toolrouter.BuiltinRedactSecrets {
			h.redact = newRedactor(c.Patterns)
		}
		s.before = s.before || h.before
		s.after = s.after || h.after
		s.hooks = append(s.hooks, h)
	}
	return s
}

func (h *hook) applies(c *Call) bool {
	return h.tools.Match(c.Tool.Name) && h.clients.Match(c.Client)
}

// Before runs the before-hooks that apply to c, in order: the first deny
// (enforced) stops the call; a modify hands the next hook, and the tool,
// the new arguments.
func (g *Guards) Before(ctx context.Context, c Call) Verdict {
	var v Verdict
	s := g.current()
	if !s.before {
		return v
	}
	for _, h := range s.hooks {
		if !h.before || !h.applies(&c) {
			continue
		}
		a, err := g.ask(ctx, h, toolrouter.PhaseBefore, &c, nil)
		var args map[string]any
		if err == nil && a.Decision == decisionModify {
			args, err = modifiedArgs(c.Tool, a.Arguments)
		}
		d := h.decision(ctx, toolrouter.PhaseBefore, &c, a, err)
		v.Decisions = append(v.Decisions, d)
		if h.Mode == toolrouter.ModeAudit {
			continue
		}
		if v.Deny = h.denies(a, err, d); v.Deny != "" {
			return v
		}
		if err == nil && a.Decision == decisionModify {
			c.Args, v.Args = args, args
		}
	}
	return v
}

// After runs the after-phase webhooks that apply to c on out, in file
// order: they see successful outputs only (a failure has none to judge),
// each as redacted by the enforced redact_secrets listed before it (so a
// webhook listed after a redaction never sees its secrets). It returns
// the outcome the caller gets, but for the redaction (Redact), which runs
// after every webhook, whatever the order of the file (issue 32 item 13).
func (g *Guards) After(ctx context.Context, c Call, out toolrouter.Outcome) (toolrouter.Outcome, Verdict) {
	var v Verdict
	s := g.current()
	if !s.after {
		return out, v
	}
	var redactors []*redactor // the enforced redactions listed so far
	for _, h := range s.hooks {
		if !h.after || !h.applies(&c) {
			continue
		}
		if h.redact != nil {
			if h.Mode != toolrouter.ModeAudit {
				redactors = append(redactors, h.redact)
			}
			continue
		}
		if !out.Success() {
			continue
		}
		shown := out.Output
		for _, r := range redactors {
			shown = r.json(shown, map[string]int{})
		}
		a, err := g.ask(ctx, h, toolrouter.PhaseAfter, &c, shown)
		d := h.decision(ctx, toolrouter.PhaseAfter, &c, a, err)
		v.Decisions = append(v.Decisions, d)
		if h.Mode == toolrouter.ModeAudit {
			continue
		}
		if v.Deny = h.denies(a, err, d); v.Deny != "" {
			// The backend was called: its credential stays in the audit record.
			return toolrouter.Outcome{Err: v.Deny, Category: toolrouter.CategoryPermission, Status: out.Status,
				Attempts: out.Attempts, Answered: true, Credential: out.Credential}, v
		}
		if err == nil && a.Decision == decisionModify {
			// The hook's output replaces the tool's; an MCP backend's
			// result no longer says what the caller gets.
			out.Output, out.MCPResult, out.InvalidUTF8, v.Changed = a.Output, nil, false, true
			v.Notes = append(v.Notes, "output: replaced by guardrail "+h.Name)
		}
	}
	return out, v
}

// Redact runs the redact_secrets guardrails that apply to c on out, in
// file order: the output, the error text and the MCP result, as the
// after-phase webhooks left them. It runs last of what changes an
// output, so that no secret a webhook's replacement holds reaches the
// caller or the stored result.
func (g *Guards) Redact(ctx context.Context, c Call, out toolrouter.Outcome) (toolrouter.Outcome, Verdict) {
	var v Verdict
	s := g.current()
	if !s.after {
		return out, v
	}
	for _, h := range s.hooks {
		if !h.after || h.redact == nil || !h.applies(&c) {
			continue
		}
		r, d := h.redactOutcome(out)
		v.Decisions = append(v.Decisions, d)
		if d.Redacted == 0 {
			continue
		}
		if h.Mode == toolrouter.ModeAudit {
			zerolog.Ctx(ctx).Info().Str("guardrail", h.Name).Str("tool_call_id", c.ToolCallID).Int("redacted", d.Redacted).Msg("guardrail in audit mode would have redacted secrets")
			continue
		}
		out, v.Changed = r, true
		v.Notes = append(v.Notes, fmt.Sprintf("output: %d secret(s) redacted by guardrail %s (%s)", d.Redacted, h.Name, d.Reason))
	}
	return out, v
}

// Reports is the redaction, by the enforced redact hooks that apply to c,
// of what the backend reports while the call runs (progress messages, log
// data): it reaches the caller before the output does. Both are nil when
// no such hook applies.
func (g *Guards) Reports(c Call) (text func(string) string, data func(json.RawMessage) json.RawMessage) {
	var rs []*redactor
	for _, h := range g.current().hooks {
		if h.after && h.redact != nil && h.Mode != toolrouter.ModeAudit && h.applies(&c) {
			rs = append(rs, h.redact)
		}
	}
	if len(rs) == 0 {
		return nil, nil
	}
	text = func(s string) string {
		for _, r := range rs {
			s = r.text(s, map[string]int{})
		}
		return s
	}
	data = func(raw json.RawMessage) json.RawMessage {
		for _, r := range rs {
			raw = r.json(raw, map[string]int{})
		}
		return raw
	}
	return text, data
}

// decision is the audit entry of hook h's answer a (or failure err), and
// logs what an audit-mode hook would have done.
// denies is why an enforced hook's answer a (or its failure err, recorded
// as d) refuses the call; "" when it does not.
func (h *hook) denies(a answer, err error, d toolrouter.GuardrailDecision) string {
	switch {
	case err != nil && h.OnError == toolrouter.OnErrorDeny:
		return d.Reason
	case err == nil && a.Decision == decisionDeny:
		return denial(h.Name, a.Reason)
	}
	return ""
}

func (h *hook) decision(ctx context.Context, phase string, c *Call, a answer, err error) toolrouter.GuardrailDecision {
	d := toolrouter.GuardrailDecision{Name: h.Name, Phase: phase, Decision: a.Decision, Reason: a.Reason}
	if err != nil {
		d.Decision = decisionError
		d.Reason = fmt.Sprintf("guardrail %s failed: %v", h.Name, err)
		switch {
		case h.Mode == toolrouter.ModeAudit:
			d.Reason += "; the call goes on (mode: audit)"
		case h.OnError == toolrouter.OnErrorDeny:
			d.Reason += "; the call is refused (on_error: deny)"
		default:
			d.Reason += "; the call goes on (on_error: allow)"
		}
	}
	if h.Mode == toolrouter.ModeAudit {
		d.Mode = toolrouter.ModeAudit
		if d.Decision != decisionAllow {
			zerolog.Ctx(ctx).Info().Str("guardrail", h.Name).Str("phase", phase).Str("tool", c.Tool.Name).
				Str("tool_call_id", c.ToolCallID).Str("decision", d.Decision).Str("reason", d.Reason).
				Msg("guardrail in audit mode: decision recorded, not applied")
		}
	}
	return d
}

// denial is the message of a call a hook denied.
func denial(name, reason string) string {
	if reason == "" {
		return "denied by guardrail " + name
	}
	return "denied by guardrail " + name + ": " + reason
}

// modifiedArgs decodes the arguments a before-hook answered and checks
// them against the tool's input schema, like the caller's.
func modifiedArgs(t *toolrouter.Tool, raw json.RawMessage) (map[string]any, error) {
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return nil, fmt.Errorf("invalid answer: arguments must be a JSON object")
	}
	if t.ValidateArgs != nil {
		if err := t.ValidateArgs(args); err != nil {
			return nil, fmt.Errorf("its arguments do not match the tool's input_schema: %s", strings.TrimPrefix(err.Error(), "schema validation failed: "))
		}
	}
	return args, nil
}
