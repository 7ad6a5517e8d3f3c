package oauthconn

import (
	"crypto/sha256"
	"encoding/hex"
)

// hashID names a secret by the first 16 hex digits of its SHA-256.
func hashID(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:8])
}
