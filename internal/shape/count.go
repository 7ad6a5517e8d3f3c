//go:build !tiktokencount

package shape

// count counts the tokens of s, stopping once it passes limit (limit < 0:
// no limit). It returns the count (limit+1 when it stopped) and the bytes
// of s it covered. Built with -tags tiktokencount, tiktoken-go counts
// instead (count_tiktoken.go: the ablation of bench/README.md's decision
// table row for tokens.go).
func (t *tokenizer) count(s string, limit int, m *meter) (n, covered int) {
	return t.run(s, limit, m, nil)
}
