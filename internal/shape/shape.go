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
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/theory/jsonpath"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// MinBytes is the smallest max_output_bytes (and the byte floor of a token
// budget): room for a marker and a little of the output.
const MinBytes = 256

// Shaper shapes outputs. Its tokenizer is loaded on first use.
type Shaper struct {
	once sync.Once
	enc  *tiktoken.Tiktoken
	err  error
}

// New returns a Shaper.
func New() *Shaper { return &Shaper{} }

// encoding loads o200k_base from the embedded BPE file (no download).
func (s *Shaper) encoding() (*tiktoken.Tiktoken, error) {
	s.once.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		s.enc, s.err = tiktoken.GetEncoding(tiktoken.MODEL_O200K_BASE)
		if s.err != nil {
			s.err = fmt.Errorf("load o200k_base: %w", s.err)
		}
	})
	return s.enc, s.err
}

// Tokens counts the o200k_base tokens of text.
func (s *Shaper) Tokens(text string) (int, error) {
	enc, err := s.encoding()
	if err != nil {
		return 0, err
	}
	return len(enc.Encode(text, nil, nil)), nil
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
	out, cut := raw, false
	if len(raw) > limit {
		out, cut = s.fitBytes(raw, b.Keep, limit, where), true
	}
	if b.Tokens <= 0 {
		return out, cut
	}
	for range 8 {
		n, err := s.Tokens(string(out))
		if err != nil || n <= b.Tokens {
			if err != nil { // no tokenizer: 4 bytes a token, the usual rule of thumb
				if alt := 4 * b.Tokens; len(out) > alt {
					out, cut = s.fitBytes(raw, b.Keep, max(alt, MinBytes), where), true
				}
			}
			return out, cut
		}
		next := int(float64(len(out)) * float64(b.Tokens) / float64(n) * 0.95)
		if next >= len(out) {
			next = len(out) - 1
		}
		if next < MinBytes/2 {
			next = MinBytes / 2
		}
		out, cut = s.fitBytes(raw, b.Keep, next, where), true
		if next == MinBytes/2 {
			return out, cut
		}
	}
	return out, cut
}

// fitBytes shapes raw into at most limit bytes.
func (s *Shaper) fitBytes(raw json.RawMessage, keep []string, limit int, where string) json.RawMessage {
	var str string
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '"' && json.Unmarshal(trimmed, &str) == nil {
		return encodeString(str, limit, where)
	}
	var n *node
	if len(keep) > 0 {
		n = project(trimmed, keep)
	}
	if n == nil {
		var err error
		if n, err = parse(trimmed, limit); err != nil {
			// Not JSON (cannot happen for a tool's output): cut as text.
			return encodeString(string(raw), limit, where)
		}
	}
	var buf bytes.Buffer
	fit(n, limit).write(&buf)
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
