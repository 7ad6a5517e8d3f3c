// Package randid makes the random identifiers of toolrouterd (run and
// plan ids, provider call ids, request ids, replica names): n bytes of
// crypto/rand in lowercase hex. It depends on the standard library only.
package randid

import (
	"crypto/rand"
	"encoding/hex"
)

// Hex is n random bytes as 2n lowercase hex digits. crypto/rand.Read never
// fails (Go ≥ 1.24: it crashes the program instead).
func Hex(n int) string {
	if n > 32 {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	var b [32]byte // ids are short: one allocation, the string's
	var h [64]byte
	_, _ = rand.Read(b[:n])
	hex.Encode(h[:], b[:n])
	return string(h[:2*n])
}
