// Package shape fits a tool's output into its output budget (docs/output-budgets.md
// "Output budgets"): text keeps its head and tail around a marker saying
// how much was cut; JSON keeps the nodes of its keep paths (RFC 9535
// JSONPath), then is pruned breadth-first — small values whole, large
// strings cut in the middle, long arrays and objects cut after their first
// members with a marker member, containers that no longer fit summarized
// ("[… 120 items]"). Budgets count bytes, and tokens with OpenAI's
// o200k_base encoding (tiktoken, loaded offline from the binary).
package shape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/theory/jsonpath"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// MinBytes is the smallest max_output_bytes (and the byte floor of a token
// budget): room for a marker and a little of the output.
const MinBytes = 256

// Shaper shapes outputs. Its tokenizer is loaded on first use.
type Shaper struct {
	once sync.Once
	tok  *tokenizer
	err  error
	// work is what token counting has cost so far (bytes scanned, merge
	// steps), for tests that bound it.
	workBytes, workSteps atomic.Int64
}

// New returns a Shaper.
func New() *Shaper { return &Shaper{} }

// tokenizer loads o200k_base from the embedded BPE file (no download).
func (s *Shaper) tokenizer() (*tokenizer, error) {
	s.once.Do(func() { s.tok, s.err = newTokenizer() })
	return s.tok, s.err
}

// Tokens counts the o200k_base tokens of text (as tiktoken's
// encode_ordinary does), in time linear in text.
func (s *Shaper) Tokens(text string) (int, error) {
	n, _, err := s.count(text, -1)
	return n, err
}

// count counts the tokens of text, stopping past limit (limit < 0: none);
// it returns the count and the bytes of text it covered.
func (s *Shaper) count(text string, limit int) (int, int, error) {
	tok, err := s.tokenizer()
	if err != nil {
		return 0, 0, err
	}
	var m meter
	n, covered := tok.count(text, limit, &m)
	s.workBytes.Add(int64(m.bytes))
	s.workSteps.Add(int64(m.steps))
	return n, covered, nil
}

// CheckKeep reports a keep path that is not a valid RFC 9535 JSONPath
// query.
func CheckKeep(path string) error {
	_, err := jsonpath.Parse(path)
	return err
}

// Output fits a tool's JSON output into b. where says where the whole
// output stays (for the text marker). It returns the output unchanged and
// false when it fits.
func (s *Shaper) Output(raw json.RawMessage, b toolrouter.OutputBudget, where string) (json.RawMessage, bool) {
	return s.output(raw, b, where, false)
}

// output is Output for raw that checked says is known to be valid JSON
// (toolrouter.Outcome.OutputChecked): it is parsed without a scan to
// check it first.
func (s *Shaper) output(raw json.RawMessage, b toolrouter.OutputBudget, where string, checked bool) (json.RawMessage, bool) {
	if b.IsZero() {
		return raw, false
	}
	limit := b.Bytes
	if b.Tokens > 0 {
		// Every token is at least one byte: a short output needs no count.
		if len(raw) <= b.Tokens && (limit <= 0 || len(raw) <= limit) {
			return raw, false
		}
		// A long one is first cut to 16 bytes a token (prose is about 4,
		// JSON and code about 3): the count then runs on a bounded text.
		if limit <= 0 || limit > 16*b.Tokens {
			limit = max(16*b.Tokens, MinBytes)
		}
	}
	f := &fitter{raw: raw, keep: b.Keep, where: where, checked: checked}
	out, cut := raw, false
	if len(raw) > limit {
		out, cut = f.fit(limit), true
	}
	if b.Tokens <= 0 {
		return out, cut
	}
	// Each count stops once past the budget, so it reads at most the bytes
	// of b.Tokens tokens (and at most the 16 bytes a token cut above): the
	// CPU an output costs is bounded by its budget, whatever its size.
	for range 8 {
		n, covered, err := s.count(string(out), b.Tokens)
		if err != nil { // no tokenizer: 4 bytes a token, the usual rule of thumb
			if alt := 4 * b.Tokens; len(out) > alt {
				out, cut = f.fit(max(alt, MinBytes)), true
			}
			return out, cut
		}
		if n <= b.Tokens {
			return out, cut
		}
		// The first covered bytes hold n > b.Tokens tokens.
		next := int(float64(covered) * float64(b.Tokens) / float64(n) * 0.95)
		if next >= len(out) {
			next = len(out) - 1
		}
		if next < MinBytes/2 {
			next = MinBytes / 2
		}
		out, cut = f.fit(next), true
		if next == MinBytes/2 {
			return out, cut
		}
	}
	return out, cut
}

// fitter shapes one output into successively smaller limits, decoding or
// parsing it once, at the first (largest) limit.
type fitter struct {
	raw     json.RawMessage
	keep    []string
	where   string
	checked bool // raw is known to be valid JSON

	parsed bool
	str    *string // a string output, decoded
	tree   *node   // a JSON output, parsed (or projected) at the first limit
}

// fit shapes the output into at most limit bytes; limits after the
// first are smaller.
func (f *fitter) fit(limit int) json.RawMessage {
	if !f.parsed {
		f.parsed = true
		trimmed := bytes.TrimSpace(f.raw)
		var str string
		if len(trimmed) > 0 && trimmed[0] == '"' && json.Unmarshal(trimmed, &str) == nil {
			f.str = &str
		} else {
			if len(f.keep) > 0 {
				f.tree = project(trimmed, f.keep)
			}
			if f.tree == nil {
				f.tree, _ = parseChecked(trimmed, limit, f.checked)
			}
		}
	}
	switch {
	case f.str != nil:
		return encodeString(*f.str, limit, f.where)
	case f.tree == nil:
		// Not JSON (cannot happen for a tool's output): cut as text.
		return encodeString(string(f.raw), limit, f.where)
	}
	var buf bytes.Buffer
	fit(f.tree, limit).write(&buf)
	return buf.Bytes()
}

// encodeString encodes s cut by Text as a JSON string of at most limit
// bytes (escapes lengthen it: then the text is cut further).
func encodeString(s string, limit int, where string) json.RawMessage {
	for n := limit - 2; ; {
		b := encStr(Text(s, n, where))
		if len(b) <= limit || n <= 0 {
			return b
		}
		n -= len(b) - limit
	}
}

// Text keeps the head and tail of s, at most limit bytes in all, around a
// marker saying how many bytes were cut and where the whole text is.
func Text(s string, limit int, where string) string {
	if len(s) <= limit {
		return s
	}
	marker := func(cut int) string {
		m := fmt.Sprintf("\n[… toolrouterd cut %s of %s bytes here", group(cut), group(len(s)))
		if where != "" {
			m += "; the whole output: " + where
		}
		return m + " …]\n"
	}
	m := marker(len(s))
	if len(m) >= limit {
		return cutMiddle(s, limit)
	}
	keep := limit - len(m)
	head, tail := headTail(s, keep)
	return head + marker(len(s)-len(head)-len(tail)) + tail
}

// headTail returns the first and last bytes of s, n in all, split at
// rune boundaries, the head getting the larger half.
func headTail(s string, n int) (string, string) {
	h := n - n/2
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - n/2
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:h], s[t:]
}

// cutMiddle shortens s to at most n bytes with "…" (3 bytes) in the
// middle.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 3 {
		return ""
	}
	h, t := headTail(s, n-3)
	return h + "…" + t
}

// group writes n with thousands separators.
func group(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
