package guardrail

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// referenceText is redaction as it was before issue 32 (finding 5): every
// rule whose keyword occurs anywhere in s runs over the whole of s. The
// one-pass redactor must answer the same.
func referenceText(r *redactor, s string, found map[string]int) string {
	lower := strings.ToLower(s)
	var spans []span
	for i := range r.rules {
		ru := &r.rules[i]
		if len(ru.Keywords) > 0 {
			hit := false
			for _, w := range ru.Keywords {
				hit = hit || strings.Contains(lower, w)
			}
			if !hit {
				continue
			}
		}
		for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
			a, b := secretOf(m, ru.SecretGroup)
			if a < 0 || b <= a || ru.Entropy > 0 && entropy(s[a:b]) < ru.Entropy {
				continue
			}
			spans = append(spans, span{a, b, ru.ID})
		}
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
		if sp.start < pos {
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

// secretish is a text of keywords, assignments and random values of the
// lengths and alphabets the rules look for.
func secretish(r *rand.Rand, words []string, n int) string {
	alpha := []string{"abcdef0123456789", "abcdefghijklmnopqrstuvwxyz0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "abcdefghijklmnopqrstuvwxyz0123456789_-="}
	seps := []string{" = ", "=", ": ", ":", "=>", ` = "`, `":"`, " ", "_", "-", ".", "\n", "\t", "', '", " := "}
	ends := []string{"", " ", "\n", `"`, "'", ";", ",", "}", "\\n"}
	var b strings.Builder
	for b.Len() < n {
		switch r.IntN(4) {
		case 0:
			b.WriteString(strings.ToUpper(words[r.IntN(len(words))]))
		default:
			b.WriteString(words[r.IntN(len(words))])
		}
		if r.IntN(3) == 0 {
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteString(seps[r.IntN(len(seps))])
		a := alpha[r.IntN(len(alpha))]
		for range []int{8, 16, 17, 20, 24, 30, 32, 36, 37, 40, 43, 44, 48, 59, 64, 86, 93}[r.IntN(17)] + r.IntN(2) {
			b.WriteByte(a[r.IntN(len(a))])
		}
		b.WriteString(ends[r.IntN(len(ends))])
	}
	return b.String()
}

func allKeywords(r *redactor) []string {
	var words []string
	for _, ru := range r.rules {
		words = append(words, ru.Keywords...)
	}
	return append(words, "bearer ", "Bearer ", "password", "api_key", "-----BEGIN RSA PRIVATE KEY-----\n", "-----END RSA PRIVATE KEY-----", "eyJ", "curl -H 'Authorization: ", "ghp_", "sk-ant-api03-", "AKIA", "xoxb-", "glpat-")
}

// TestRedactionAsBefore: the one-pass redactor finds what running every
// rule over the whole text found, on texts dense with keywords and
// values of the shapes the rules look for.
func TestRedactionAsBefore(t *testing.T) {
	red := newRedactor(nil)
	words := allKeywords(red)
	r := rand.New(rand.NewPCG(7, 8))
	anchored := 0
	for _, ru := range red.rules {
		if ru.anchor != nil {
			anchored++
		}
	}
	t.Logf("%d of %d rules tried at their keywords", anchored, len(red.rules))
	for i := range 80 {
		s := secretish(r, words, 200+r.IntN(1200))
		gotFound, wantFound := map[string]int{}, map[string]int{}
		got, want := red.text(s, gotFound), referenceText(red, s, wantFound)
		if got != want {
			t.Fatalf("case %d differs:\ngot  %q\nwant %q\ntext %q", i, got, want, s)
		}
	}
}

// TestRedactionIsLinear (issue 32, finding 5): on keyword-heavy text the
// regexps are given a bounded number of bytes per byte of text; before,
// every rule whose keyword occurs scanned the whole text (~220 times its
// size here: 0.5 MiB cost 7.1 s of CPU).
func TestRedactionIsLinear(t *testing.T) {
	red := newRedactor(nil)
	words := allKeywords(red)
	var b strings.Builder
	for b.Len() < 256<<10 {
		for _, w := range words {
			b.WriteString(w)
			b.WriteString(" = value ")
		}
	}
	s := b.String()
	red.text(s, map[string]int{})
	if per := float64(red.scanned.Load()) / float64(len(s)); per > 40 {
		t.Errorf("the regexps were given %.0f bytes a byte of text", per)
	}
}

// BenchmarkRedactKeywordHeavy: 0.5 MiB of keyword-dense text (issue 32,
// finding 5: 7.1 s of CPU), as before (reference) and in one pass.
func BenchmarkRedactKeywordHeavy(b *testing.B) {
	red := newRedactor(nil)
	s := secretish(rand.New(rand.NewPCG(1, 1)), allKeywords(red), 512<<10)
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			referenceText(red, s, map[string]int{})
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			red.text(s, map[string]int{})
		}
	})
}

// referenceJSON is JSON redaction as it was before issue 32: decoded,
// redacted in place, encoded again.
func referenceJSON(r *redactor, raw []byte, found map[string]int) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return referenceText(r, x, found)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && s != "" && secretFields[strings.ToLower(k)] {
					x[k] = "[REDACTED:secret-field]"
					found["secret-field"]++
					continue
				}
				x[k] = walk(e)
			}
		}
		return v
	}
	return walk(v)
}

// TestRedactJSONAsBefore: the token walk redacts the same strings as
// decoding did (compared decoded: the walk keeps the document's layout).
func TestRedactJSONAsBefore(t *testing.T) {
	red := newRedactor(nil)
	words := allKeywords(red)
	r := rand.New(rand.NewPCG(9, 10))
	fields := []string{"Secret", "API_KEY", "name", "note", "token", "pass\\u0077ord"} // distinct once decoded
	var gen func(depth int) string
	gen = func(depth int) string {
		switch k := r.IntN(7); {
		case depth > 3 || k == 0:
			b, _ := json.Marshal(secretish(r, words, r.IntN(120)))
			return string(b)
		case k == 1:
			return []string{"1", "-2.5e3", "true", "null", `""`, `"<&>\u2028"`}[r.IntN(6)]
		case k == 2 || k == 3:
			var items []string
			for range r.IntN(5) {
				items = append(items, gen(depth+1))
			}
			return "[ " + strings.Join(items, " ,\n") + "]"
		default:
			var members []string
			for _, f := range r.Perm(len(fields))[:r.IntN(5)] {
				members = append(members, `"`+fields[f]+`" : `+gen(depth+1))
			}
			return "{" + strings.Join(members, ",") + "}"
		}
	}
	for i := range 150 {
		raw := []byte(gen(0))
		gotFound, wantFound := map[string]int{}, map[string]int{}
		got := red.json(raw, gotFound)
		want := referenceJSON(red, raw, wantFound)
		var gotV any
		dec := json.NewDecoder(bytes.NewReader(got))
		dec.UseNumber()
		if err := dec.Decode(&gotV); err != nil || !reflect.DeepEqual(gotV, want) {
			t.Fatalf("case %d (%v):\ngot  %s\nwant %v\nin   %s", i, err, got, want, raw)
		}
		if !maps.Equal(gotFound, wantFound) {
			t.Fatalf("case %d: found %v, want %v", i, gotFound, wantFound)
		}
	}
}

// TestRedactJSONMemory (issue 32, finding 6): redacting a 4 MiB array of
// small numbers allocates about its size (decoding it to []any took ~50
// bytes a byte: 16 MiB peaked at 865 MiB in the service).
func TestRedactJSONMemory(t *testing.T) {
	red := newRedactor(nil)
	raw := []byte("[" + strings.TrimSuffix(strings.Repeat("7,", 2<<20), ",") + `,"token: ghp_R2d2C3poR2d2C3poR2d2C3poR2d2C3poab12"]`)
	red.json([]byte(`["warm"]`), map[string]int{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := red.json(raw, map[string]int{})
	runtime.ReadMemStats(&after)
	if !bytes.Contains(got, []byte("[REDACTED:github-pat]")) {
		t.Fatalf("not redacted: %s", got[len(got)-80:])
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*uint64(len(raw)) {
		t.Errorf("redacting %d bytes allocated %d", len(raw), alloc)
	}
}

// BenchmarkRedactJSONNumbers: a 16 MiB array of small numbers (issue 32,
// finding 6), decoded as before (reference) and walked.
func BenchmarkRedactJSONNumbers(b *testing.B) {
	red := newRedactor(nil)
	raw := []byte("[" + strings.TrimSuffix(strings.Repeat("7,", 8<<20), ",") + "]")
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			referenceJSON(red, raw, map[string]int{})
		}
	})
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			red.json(raw, map[string]int{})
		}
	})
}
