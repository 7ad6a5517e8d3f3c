//go:build tiktokencount

package shape

import (
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The ablation build of the decision table's row for tokens.go
// (bench/README.md): tiktoken-go counts, as before issue 32 finding 4.
// Never in a default build; its encoder is loaded once per process.
var tiktokenEncoding = sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	return tiktoken.GetEncoding(tiktoken.MODEL_O200K_BASE)
})

// count counts as the default build's does, with tiktoken-go's
// EncodeOrdinary over the whole text.
func (t *tokenizer) count(s string, limit int, m *meter) (n, covered int) {
	enc, err := tiktokenEncoding()
	if err != nil {
		return t.run(s, limit, m, nil)
	}
	ids := enc.EncodeOrdinary(s)
	m.bytes += len(s)
	if limit < 0 || len(ids) <= limit {
		return len(ids), len(s)
	}
	return limit + 1, len(enc.Decode(ids[:limit+1]))
}
