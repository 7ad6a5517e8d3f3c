package guardrail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// ruleSource is a secret rule as written: gitleaks' (gitleaks_rules.go,
// generated) or ours.
type ruleSource struct {
	ID    string
	Regex string
	// Keywords (lower case): the regex runs only on text holding one.
	Keywords []string
	// Entropy is the least Shannon entropy (bits per character) of a match
	// that counts; 0: any.
	Entropy float64
	// SecretGroup is the capture group holding the secret; 0: the first
	// group that matched, else the whole match.
	SecretGroup int
}

// ownRules are the shapes gitleaks' default rules leave to its
// generic-api-key rule (which we leave out): bearer tokens in text, and
// password=, secret: … pairs.
var ownRules = []ruleSource{
	{ID: "bearer-token", Regex: `(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{12,}=*)`, Keywords: []string{"bearer"}},
	{ID: "password-assignment", Regex: `(?i)(?:password|passwd|secret[_-]?access[_-]?key|client[_-]?secret|secret|api[_-]?key|access[_-]?token|auth[_-]?token)["']?\s*[=:]\s*["']?([^\s"'&;,}]{3,})`,
		Keywords: []string{"pass", "secret", "key", "token"}},
}

// secretFields are the object members whose string value is a secret
// whatever it looks like ({"password": "hunter2"}), compared in lower case.
var secretFields = map[string]bool{"password": true, "passwd": true, "secret": true, "client_secret": true,
	"api_key": true, "apikey": true, "access_token": true, "refresh_token": true, "auth_token": true,
	"private_key": true, "secret_access_key": true, "aws_secret_access_key": true}

// rule is a compiled secret rule.
type rule struct {
	ruleSource
	re *regexp.Regexp
	// anchor, when set, tries the rule only where the literals its
	// matches start with occur (keywords.go).
	anchor *anchoring
}

// builtin is ours and gitleaks' rules, with the index of their keywords.
type builtin struct {
	rules []rule
	index *keywordIndex
}

// builtinRules compiles ours and gitleaks' rules once per process: they
// are the same for every registry.
var builtinRules = sync.OnceValue(func() builtin {
	var out []rule
	for _, src := range slices.Concat(ownRules, gitleaksRules) {
		re, err := regexp.Compile(src.Regex)
		if err != nil {
			continue // TestBuiltinRulesCompile keeps this empty
		}
		out = append(out, rule{ruleSource: src, re: re, anchor: anchor(src.Regex)})
	}
	return builtin{rules: out, index: newKeywordIndex(out)}
})

// redactor replaces secrets in text by [REDACTED:kind].
type redactor struct {
	rules  []rule
	index  *keywordIndex // of the built-in rules (the first ones); patterns have no keywords
	always []int         // the rules without keywords, which apply to every text
	// scanned counts the bytes the rules' regexps were given, for tests
	// that bound it.
	scanned atomic.Int64
}

// newRedactor is the redactor of the built-in rules plus the registry's
// patterns (which the registry checked).
func newRedactor(patterns []toolrouter.SecretPattern) *redactor {
	b := builtinRules()
	r := &redactor{rules: b.rules, index: b.index}
	if len(patterns) > 0 {
		r.rules = slices.Clone(r.rules)
		for _, p := range patterns {
			if re, err := regexp.Compile(p.Regex); err == nil {
				r.rules = append(r.rules, rule{ruleSource: ruleSource{ID: p.Name, Regex: p.Regex}, re: re})
			}
		}
	}
	for i, ru := range r.rules {
		if len(ru.Keywords) == 0 {
			r.always = append(r.always, i)
		}
	}
	return r
}

// span is a secret found in a string: bytes [start, end) of kind.
type span struct {
	start, end int
	kind       string
}

// text redacts s, counting what it replaced by kind in found. One scan
// finds the keywords; a rule runs only where (anchored rules) or when
// (the others) one of its keywords occurs.
func (r *redactor) text(s string, found map[string]int) string {
	if s == "" {
		return s
	}
	var buf [512]byte
	lower := append(buf[:0], s...)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	var present []bool // by rule: one of its keywords occurs
	var starts [][]int // by rule: where an anchored match may start
	r.index.trie.Walk(lower, func(end, n, pattern int64) bool {
		if present == nil {
			present, starts = make([]bool, len(r.rules)), make([][]int, len(r.rules))
		}
		for _, ri := range r.index.keywordOf[pattern] {
			present[ri] = true
		}
		for _, ri := range r.index.leadOf[pattern] {
			starts[ri] = append(starts[ri], int(end-n+1))
		}
		return true
	})
	var spans []span
	add := func(ru *rule, m []int) {
		a, b := secretOf(m, ru.SecretGroup)
		if a < 0 || b <= a || ru.Entropy > 0 && entropy(s[a:b]) < ru.Entropy {
			return
		}
		spans = append(spans, span{a, b, ru.ID})
	}
	scanned := 0
	apply := r.always // no keyword occurs: only the rules without keywords apply
	if present != nil {
		apply = nil
		for i := range r.rules {
			if len(r.rules[i].Keywords) == 0 || present[i] {
				apply = append(apply, i)
			}
		}
	}
	for _, i := range apply {
		ru := &r.rules[i]
		if ru.anchor == nil {
			scanned += len(s)
			for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
				add(ru, m)
			}
			continue
		}
		c := starts[i]
		slices.Sort(c)
		next := 0 // matches do not overlap, as FindAll's
		for _, st := range slices.Compact(c) {
			if st < next || !ru.anchor.holds(s, st) {
				continue
			}
			// No match is longer than maxLen: a window one character
			// longer sees the same assertions at every place a match
			// can end.
			end := min(len(s), st+ru.anchor.maxLen+utf8.UTFMax)
			scanned += end - st
			m := ru.anchor.re.FindStringSubmatchIndex(s[st:end])
			if m == nil {
				continue
			}
			for k := range m {
				if m[k] >= 0 {
					m[k] += st
				}
			}
			next = m[1]
			add(ru, m)
		}
	}
	r.scanned.Add(int64(scanned))
	if len(spans) == 0 {
		return s
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		return spans[i].end > spans[j].end
	})
	var b strings.Builder
	pos := 0
	for _, sp := range spans {
		if sp.start < pos { // inside (or overlapping) one already replaced
			continue
		}
		b.WriteString(s[pos:sp.start])
		b.WriteString("[REDACTED:" + sp.kind + "]")
		found[sp.kind]++
		pos = sp.end
	}
	b.WriteString(s[pos:])
	return b.String()
}

// secretOf picks the secret of a match: group g, else the first group
// that matched, else the whole match.
func secretOf(m []int, g int) (int, int) {
	if g > 0 && 2*g+1 < len(m) {
		return m[2*g], m[2*g+1]
	}
	for i := 2; i+1 < len(m); i += 2 {
		if m[i] >= 0 {
			return m[i], m[i+1]
		}
	}
	return m[0], m[1]
}

// entropy is the Shannon entropy of s in bits per byte, as gitleaks
// measures it.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var e float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

// json redacts the strings of a JSON document; it returns raw itself when
// nothing was found (or raw is not JSON). It walks raw's tokens rather
// than decoding it (issue 32, finding 6: a 16 MiB array of numbers
// decoded to []any took ~50 bytes a byte): strings are replaced where
// they are, everything else is copied as it was, so the memory it takes is
// the output's size plus that of its longest string, a few times.
func (r *redactor) json(raw json.RawMessage, found map[string]int) json.RawMessage {
	out, _ := r.jsonChecked(raw, found, false)
	return out
}

// jsonChecked is json for raw that checked says is known to be valid JSON
// (toolrouter.Outcome.OutputChecked: not scanned again to know); ok reports
// that raw was valid, so that what it returns is too.
func (r *redactor) jsonChecked(raw json.RawMessage, found map[string]int, checked bool) (_ json.RawMessage, ok bool) {
	if len(raw) == 0 || !checked && !json.Valid(raw) {
		return raw, false
	}
	return r.walk(raw, found), true
}

// walk is json's work on raw, which is valid JSON.
func (r *redactor) walk(raw json.RawMessage, found map[string]int) json.RawMessage {
	var out []byte // nil until something is replaced
	copied := 0    // raw[:copied] is in out
	// Whether the next string is an object member's name, by depth.
	var inObject []bool
	expectKey := false
	secretKey := false // the member whose value comes next is a secret field
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case '{', '[':
			inObject = append(inObject, c == '{')
			expectKey, secretKey = c == '{', false
			i++
		case '}', ']':
			inObject = inObject[:len(inObject)-1]
			expectKey, secretKey = false, false
			i++
		case ',':
			expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
			i++
		case '"':
			j := stringEnd(raw, i)
			if expectKey {
				expectKey = false
				secretKey = j-i <= 64 && secretFields[strings.ToLower(unquote(raw[i:j]))]
				i = j
				continue
			}
			str := unquote(raw[i:j])
			var repl []byte
			switch {
			case secretKey && str != "":
				repl = []byte(`"[REDACTED:secret-field]"`)
				found["secret-field"]++
			default:
				if red := r.text(str, found); red != str {
					repl = encodeString(red)
				}
			}
			secretKey = false
			if repl != nil {
				if out == nil {
					out = make([]byte, 0, len(raw)+len(repl))
				}
				out = append(append(out, raw[copied:i]...), repl...)
				copied = j
			}
			i = j
		default: // white space, ':', numbers, true, false, null
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != ':' {
				secretKey = false
			}
			i++
		}
	}
	if out == nil {
		return raw
	}
	return append(out, raw[copied:]...)
}

// stringEnd is the index just past the JSON string that starts at i of
// raw (valid JSON).
func stringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// unquote decodes a JSON string (as encoding/json does: invalid UTF-8
// becomes U+FFFD).
func unquote(q []byte) string {
	body := q[1 : len(q)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

// encodeString encodes s as a JSON string, without HTML escaping.
func encodeString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func total(found map[string]int) int {
	n := 0
	for _, c := range found {
		n += c
	}
	return n
}

// redactOutcome redacts out's output, error text and MCP result; the
// decision counts the secrets and names their kinds.
func (h *hook) redactOutcome(out toolrouter.Outcome) (toolrouter.Outcome, toolrouter.GuardrailDecision) {
	found := map[string]int{}
	var valid bool
	out.Output, valid = h.redact.jsonChecked(out.Output, found, out.OutputChecked())
	if valid {
		// Valid JSON redacted is valid JSON: the next hook, or step, need
		// not scan it again.
		out.MarkChecked()
	}
	out.Err = h.redact.text(out.Err, found)
	// The MCP result holds the output again (structuredContent, text),
	// and may hold more that /mcp passes on (a text block beside a
	// structuredContent, a resource): its secrets count where the
	// output's do not cover them (per kind, the larger count), or a result
	// whose secrets are all outside the output would pass unredacted.
	inMCP := map[string]int{}
	out.MCPResult = h.redact.json(out.MCPResult, inMCP)
	for k, n := range inMCP {
		found[k] = max(found[k], n)
	}
	d := toolrouter.GuardrailDecision{Name: h.Name, Phase: toolrouter.PhaseAfter, Decision: decisionAllow, Mode: modeOf(h)}
	if n := total(found); n > 0 {
		kinds := make([]string, 0, len(found))
		for k, c := range found {
			kinds = append(kinds, fmt.Sprintf("%s×%d", k, c))
		}
		sort.Strings(kinds)
		d.Decision, d.Redacted, d.Reason = decisionModify, n, strings.Join(kinds, ", ")
	}
	return out, d
}

func modeOf(h *hook) string {
	if h.Mode == toolrouter.ModeAudit {
		return toolrouter.ModeAudit
	}
	return ""
}
