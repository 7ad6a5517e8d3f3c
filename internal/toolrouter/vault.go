package toolrouter

import "time"

// SealedSecret is one secret of the token vault as the store keeps it
// (docs/backend-auth.md "The token vault"): encrypted by internal/vault
// before it reaches the store, so the store (and its backups) never holds
// a token in the clear.
type SealedSecret struct {
	// Kind is what the secret is: "oauth_token", "oauth_client",
	// "oauth_state", "subject_token".
	Kind string
	// Key names the secret within its kind (unique).
	Key string
	// Owner is whom it belongs to, what ListSecrets selects by (the
	// client and user of a connection); "" for shared ones.
	Owner string
	// Label is a name safe to list (the backend of a connection).
	Label string
	// Sealed is the ciphertext (vault format: key id and AES-GCM box).
	Sealed string
	// ExpiresAt is when the store may forget it (zero: never).
	ExpiresAt time.Time
	// UpdatedAt is when it was last stored.
	UpdatedAt time.Time
}
