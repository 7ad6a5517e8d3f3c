package toolrouter

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// NameRule is a provider's rule for tool names.
type NameRule struct {
	// Allowed reports whether c may appear in a name; first is true for
	// the first character.
	Allowed func(c byte, first bool) bool
	MaxLen  int
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Provider name rules (shared/fixtures/provider-payloads/name_rules.json).
var (
	// RuleStrict is OpenAI's, Anthropic's and Bedrock's ^[a-zA-Z0-9_-]{1,64}$.
	RuleStrict = NameRule{MaxLen: 64, Allowed: func(c byte, _ bool) bool {
		return alnum(c) || c == '_' || c == '-'
	}}
	// RuleGemini is ^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$.
	RuleGemini = NameRule{MaxLen: 128, Allowed: func(c byte, first bool) bool {
		if first {
			return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		}
		return alnum(c) || c == '_' || c == '.' || c == ':' || c == '-'
	}}
	// RuleMCP is ^[A-Za-z0-9_.-]{1,128}$.
	RuleMCP = NameRule{MaxLen: 128, Allowed: func(c byte, _ bool) bool {
		return alnum(c) || c == '_' || c == '.' || c == '-'
	}}
)

// NameRuleFor returns the name rule of a provider format; ok is false for
// formats that accept any name (langchain, unknown).
func NameRuleFor(f Format) (NameRule, bool) {
	switch f {
	case FormatOpenAI, FormatAnthropic, FormatBedrock:
		return RuleStrict, true
	case FormatGemini:
		return RuleGemini, true
	case FormatMCP:
		return RuleMCP, true
	}
	return NameRule{}, false
}

// Valid reports whether name satisfies the rule.
func (r NameRule) Valid(name string) bool {
	if name == "" || len(name) > r.MaxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !r.Allowed(name[i], i == 0) {
			return false
		}
	}
	return true
}

// Alias returns the name under which a tool is exported to a provider with
// this rule: the canonical name itself when the rule accepts it, otherwise
// the name with every rejected character replaced by '_', cut to fit, and
// suffixed with "_" and 8 hex digits of sha256(canonical). The alias is
// deterministic and depends on the canonical name alone, so it stays the
// same across reloads and replicas; distinct names get distinct aliases.
func (r NameRule) Alias(canonical string) string {
	if r.Valid(canonical) {
		return canonical
	}
	sum := sha256.Sum256([]byte(canonical))
	suffix := "_" + hex.EncodeToString(sum[:4])
	var b strings.Builder
	for i := 0; i < len(canonical) && b.Len() < r.MaxLen-len(suffix); i++ {
		c := canonical[i]
		if !r.Allowed(c, i == 0) {
			c = '_'
		}
		b.WriteByte(c)
	}
	return b.String() + suffix
}

// ExportName is the name a tool is exported under for a provider format.
func ExportName(f Format, canonical string) string {
	if r, ok := NameRuleFor(f); ok {
		return r.Alias(canonical)
	}
	return canonical
}
