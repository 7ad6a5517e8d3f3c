// Package vault is the token vault (docs/backend-auth.md "The token
// vault"): secrets toolrouterd must keep for a user between requests (OAuth
// connections, dynamic client registrations, connect states, subject
// tokens of held calls) sealed with AES-256-GCM before they reach the
// store, under keys from TOOLROUTER_TOKEN_KEYS.
//
// Keys have ids: the first key seals, every key opens, so a key is
// rotated by putting a new one first and dropping the old one once every
// secret sealed with it has been read (and so re-sealed) or has expired.
// Each box is bound to its kind and key (the AES-GCM additional data), so
// a row copied onto another user's key does not open.
package vault

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Keyring is the vault's keys: the first seals, all open.
type Keyring struct {
	keys []key
}

type key struct {
	id   string
	aead cipher.AEAD
}

var keyID = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// ParseKeys reads TOOLROUTER_TOKEN_KEYS: comma-separated ID:KEY pairs,
// KEY 32 bytes in base64 (standard or URL alphabet, padded or not). Its
// errors name the entry by position and id, never the key.
func ParseKeys(spec string) (*Keyring, error) {
	var kr Keyring
	seen := map[string]bool{}
	for i, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		if !ok || !keyID.MatchString(id) {
			return nil, fmt.Errorf("TOOLROUTER_TOKEN_KEYS: entry %d: want ID:KEY, ID of 1-32 letters, digits, '_', '.' or '-'", i+1)
		}
		if seen[id] {
			return nil, fmt.Errorf("TOOLROUTER_TOKEN_KEYS: key id %q appears twice", id)
		}
		seen[id] = true
		raw, err := decodeKey(b64)
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("TOOLROUTER_TOKEN_KEYS: key %q: want 32 bytes in base64 (openssl rand -base64 32)", id)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("TOOLROUTER_TOKEN_KEYS: key %q: %w", id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("TOOLROUTER_TOKEN_KEYS: key %q: %w", id, err)
		}
		kr.keys = append(kr.keys, key{id, aead})
	}
	if len(kr.keys) == 0 {
		return nil, errors.New("TOOLROUTER_TOKEN_KEYS: no key")
	}
	return &kr, nil
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// SealingKey is the id of the key that seals.
func (k *Keyring) SealingKey() string { return k.keys[0].id }

// sealedPrefix starts every box: its format version.
const sealedPrefix = "v1:"

// Seal encrypts plain under the first key, bound to aad: "v1:ID:" and the
// nonce and ciphertext in base64url.
func (k *Keyring) Seal(plain, aad []byte) (string, error) {
	kk := k.keys[0]
	nonce := make([]byte, kk.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("vault: nonce: %w", err)
	}
	box := kk.aead.Seal(nonce, nonce, plain, aad)
	return sealedPrefix + kk.id + ":" + base64.RawURLEncoding.EncodeToString(box), nil
}

// Open decrypts a box Seal made with any key of the ring, and reports
// whether it was sealed under another key than the first (it should be
// sealed again).
func (k *Keyring) Open(sealed string, aad []byte) (plain []byte, stale bool, err error) {
	rest, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return nil, false, errors.New("vault: not a sealed secret")
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, false, errors.New("vault: not a sealed secret")
	}
	for i, kk := range k.keys {
		if kk.id != id {
			continue
		}
		box, err := base64.RawURLEncoding.DecodeString(b64)
		if err != nil || len(box) < kk.aead.NonceSize() {
			return nil, false, errors.New("vault: malformed sealed secret")
		}
		n := kk.aead.NonceSize()
		plain, err := kk.aead.Open(nil, box[:n], box[n:], aad)
		if err != nil {
			return nil, false, fmt.Errorf("vault: the secret does not open under key %q (altered, or stored under another name)", id)
		}
		return plain, i > 0, nil
	}
	return nil, false, fmt.Errorf("vault: the secret is sealed under key %q, which is not in TOOLROUTER_TOKEN_KEYS", id)
}

// Store is the vault's storage (store.Secrets).
type Store interface {
	PutSecret(ctx context.Context, s *toolrouter.SealedSecret) error
	GetSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error)
	TakeSecret(ctx context.Context, kind, key string) (*toolrouter.SealedSecret, error)
	ListSecrets(ctx context.Context, kind, owner string) ([]*toolrouter.SealedSecret, error)
	DeleteSecret(ctx context.Context, kind, key string) (bool, error)
}

// Vault seals values (as JSON) into the store and opens them.
type Vault struct {
	Keys  *Keyring
	Store Store
}

// Entry is what List says of a secret: never its value.
type Entry struct {
	Key       string
	Label     string
	UpdatedAt time.Time
	ExpiresAt time.Time
}

func aad(kind, key string) []byte { return []byte(kind + "\x00" + key) }

// Put seals value under kind and key, owned by owner, listed as label,
// kept until expires (zero: until deleted).
func (v *Vault) Put(ctx context.Context, kind, key, owner, label string, value any, expires time.Time) error {
	plain, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("vault put %s: %w", kind, err)
	}
	sealed, err := v.Keys.Seal(plain, aad(kind, key))
	if err != nil {
		return err
	}
	if err := v.Store.PutSecret(ctx, &toolrouter.SealedSecret{Kind: kind, Key: key, Owner: owner, Label: label, Sealed: sealed, ExpiresAt: expires}); err != nil {
		return fmt.Errorf("vault put %s: %w", kind, err)
	}
	return nil
}

// Get opens the secret of kind and key into into; false when there is
// none (or it expired). A secret sealed under an older key is sealed
// again under the first one (rotation).
func (v *Vault) Get(ctx context.Context, kind, key string, into any) (bool, error) {
	s, err := v.Store.GetSecret(ctx, kind, key)
	if toolrouter.ErrorCode(err) == toolrouter.ENOTFOUND {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("vault get %s: %w", kind, err)
	}
	stale, err := v.open(s, into)
	if err != nil {
		return false, err
	}
	if stale {
		if err := v.Put(ctx, kind, key, s.Owner, s.Label, into, s.ExpiresAt); err != nil {
			return true, err
		}
	}
	return true, nil
}

// Take deletes the secret and opens it into into: of several takers
// (replicas) one gets it; false for the others and when there is none.
func (v *Vault) Take(ctx context.Context, kind, key string, into any) (bool, error) {
	s, err := v.Store.TakeSecret(ctx, kind, key)
	if toolrouter.ErrorCode(err) == toolrouter.ENOTFOUND {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("vault take %s: %w", kind, err)
	}
	if _, err := v.open(s, into); err != nil {
		return false, err
	}
	return true, nil
}

func (v *Vault) open(s *toolrouter.SealedSecret, into any) (bool, error) {
	plain, stale, err := v.Keys.Open(s.Sealed, aad(s.Kind, s.Key))
	if err != nil {
		return false, fmt.Errorf("vault %s: %w", s.Kind, err)
	}
	if err := json.Unmarshal(plain, into); err != nil {
		return false, fmt.Errorf("vault %s: the secret is not what was stored: %w", s.Kind, err)
	}
	return stale, nil
}

// List is the secrets of kind owned by owner, without their values.
func (v *Vault) List(ctx context.Context, kind, owner string) ([]Entry, error) {
	ss, err := v.Store.ListSecrets(ctx, kind, owner)
	if err != nil {
		return nil, fmt.Errorf("vault list %s: %w", kind, err)
	}
	out := make([]Entry, 0, len(ss))
	for _, s := range ss {
		out = append(out, Entry{Key: s.Key, Label: s.Label, UpdatedAt: s.UpdatedAt, ExpiresAt: s.ExpiresAt})
	}
	return out, nil
}

// Delete deletes a secret and reports whether there was one.
func (v *Vault) Delete(ctx context.Context, kind, key string) (bool, error) {
	ok, err := v.Store.DeleteSecret(ctx, kind, key)
	if err != nil {
		return false, fmt.Errorf("vault delete %s: %w", kind, err)
	}
	return ok, nil
}
