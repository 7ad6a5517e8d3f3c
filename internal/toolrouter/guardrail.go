package toolrouter

import "time"

// Guardrail is one entry of the registry file's guardrails: section
// (docs/trusting-tools.md "Trusting tools"): a webhook called before and/or after the
// calls it applies to, or a built-in check. guardrail runs these.
type Guardrail struct {
	Name string
	// Endpoint is the webhook's URL; "" for a built-in.
	Endpoint string
	Headers  map[string]string
	// Builtin names a built-in guardrail (BuiltinRedactSecrets); "" for a
	// webhook.
	Builtin string
	// Tools and Clients are globs over canonical tool names and client
	// names; the guardrail applies to a call whose tool and client both
	// match ("*", the default, matches the caller of an open service too).
	Tools, Clients []string
	Phase          string        // before | after | both
	Timeout        time.Duration // of one webhook call
	OnError        string        // deny | allow
	Mode           string        // enforce | audit
	// Patterns are the registry's own secret shapes of a redacting
	// built-in, in file order.
	Patterns []SecretPattern
}

// SecretPattern is a regular expression (RE2 syntax) whose matches a
// redacting guardrail replaces by [REDACTED:Name].
type SecretPattern struct {
	Name, Regex string
}

// Guardrail phases, error policies, modes and built-ins.
const (
	PhaseBefore          = "before"
	PhaseAfter           = "after"
	PhaseBoth            = "both"
	OnErrorDeny          = "deny"
	OnErrorAllow         = "allow"
	ModeEnforce          = "enforce"
	ModeAudit            = "audit"
	BuiltinRedactSecrets = "redact_secrets"
)
