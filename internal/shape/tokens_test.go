package shape

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// reference is tiktoken-go's o200k_base, whose encode_ordinary the
// tokenizer must count alike.
func reference(t *testing.T) *tiktoken.Tiktoken {
	t.Helper()
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(tiktoken.MODEL_O200K_BASE)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// tricky are characters of every class the split pattern tells apart.
var tricky = []string{"a", "b", "s", "t", "Z", "S", "R", "E", "l", "L", "d", "é", "É", "ǅ", "ʰ", "漢", "字",
	"\u0301", "\u0903", "1", "7", "٣", "Ⅻ", "½", " ", " ", " ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000",
	"\u2028", "!", "/", "'", "'", "\"", "{", "}", ":", ",", ".", "😀", "\xff", "\xe2\x82", "<|endoftext|>", "-", "_"}

func TestTokenizerCountsAsTiktoken(t *testing.T) {
	ref := reference(t)
	tok, err := newTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	check := func(name, text string) {
		t.Helper()
		var m meter
		var ids []int
		got, _ := tok.run(text, -1, &m, &ids)
		want := ref.EncodeOrdinary(text)
		if got != len(want) || !slices.Equal(ids, want) {
			t.Fatalf("%s: %d tokens %v, tiktoken %d %v: %q", name, got, ids, len(want), want, text)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 4000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(tricky[r.IntN(len(tricky))])
		}
		check("random "+string(rune('0'+i%10)), b.String())
	}
	// Words: runs of one class, which the pattern's backtracking splits.
	for i := range 1000 {
		var b strings.Builder
		for range r.IntN(8) {
			c := tricky[r.IntN(len(tricky))]
			b.WriteString(strings.Repeat(c, 1+r.IntN(6)))
		}
		check("runs "+string(rune('0'+i%10)), b.String())
	}
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "shape.go", "json.go", "tokens.go", "../../api/openapi.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(f, string(b))
	}
	check("hello", "hello world")
	check("spaces", strings.Repeat(" ", 3000)+"x")
	check("upper", strings.Repeat("AB", 2000))
}

// TestTokenCountIsLinear (issue 32, finding 4): counting a long
// repetitive piece — 150 kB of spaces, of capitals, of one letter — costs
// merge steps about linear in its size. tiktoken's byte pair merge scans
// the whole piece for every merge: about n²/2 steps, 11·10⁹ for 150 kB,
// which took 42 s of CPU (spaces) and 56 s (capitals) under a 40k-token
// budget.
func TestTokenCountIsLinear(t *testing.T) {
	tok, err := newTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	const n = 150_000
	for name, text := range map[string]string{
		"spaces": strings.Repeat(" ", n) + "x", "capitals": strings.Repeat("A", n), "letter": strings.Repeat("a", n),
		"json": strings.Repeat(`{"id":1,"name":"x"},`, n/20), "endoftext": strings.Repeat("<|endoftext|>", n/13),
	} {
		var m meter
		tok.count(text, -1, &m)
		// log2(150k) ≈ 17 heap moves a merge, a few look-ups each.
		if bound := 64 * len(text); m.steps > bound || m.bytes != len(text) {
			t.Errorf("%s: %d merge steps, %d bytes scanned for %d bytes (bound %d steps)", name, m.steps, m.bytes, len(text), bound)
		}
	}
}

// TestTokenBudgetCostIsBounded (finding 4): shaping an output under a
// token budget counts at most a few times the bytes the budget holds,
// whatever the output's size: counting stops past the budget.
func TestTokenBudgetCostIsBounded(t *testing.T) {
	s := New()
	const tokens = 2000
	for name, text := range map[string]string{
		"prose":  strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40000),
		"spaces": strings.Repeat(" ", 1<<20) + "x",
		"json":   strings.Repeat(`{"id":1,"name":"x"},`, 50000),
	} {
		b0, _ := s.Work()
		raw, _ := jsonString(text)
		got, cut := s.Output(raw, budgetTokens(tokens), "GET /results/tc_x")
		b1, _ := s.Work()
		if n, _ := s.Tokens(string(got)); !cut || n > tokens {
			t.Errorf("%s: cut %v, %d tokens", name, cut, n)
		}
		// At most 8 counts of at most 16 bytes a token each.
		if scanned := b1 - b0; scanned > 8*16*tokens {
			t.Errorf("%s: %d bytes counted for a %d-token budget (output %d bytes)", name, scanned, tokens, len(raw))
		}
	}
}

// TestLongPieceMemoryIsBounded: one run of letters is one piece of the
// split pattern, and a byte pair merge holds buffers of about 70 bytes per
// byte of its piece: 16 MiB of letters (a tool's whole answer) took over
// 1 GB for one count. Long pieces are merged in chunks.
func TestLongPieceMemoryIsBounded(t *testing.T) {
	tok, err := newTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("abcdefghij", 400_000) // 4 MB, one piece
	var m meter
	// One count, its bytes and allocations from the same MemStats pair
	// (testing.AllocsPerRun counted twice more: under -race each count of
	// 4 MB takes about 15 s).
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, _ := tok.count(text, -1, &m)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("counting a 4 MB piece allocated %d bytes (%d allocations); want under 8 MiB", got, after.Mallocs-before.Mallocs)
	}
	if n < len(text)/10 || n > len(text) {
		t.Errorf("%d tokens for %d bytes of letters", n, len(text))
	}
}
