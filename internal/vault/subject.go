package vault

import (
	"context"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// kindSubject is the caller's JWT kept for a call that runs later (an
// approved call, a resumed run), so that it can still be exchanged as the
// caller (auth mode token_exchange).
const kindSubject = "subject_token"

// expiry is a JWT's exp, read without checking the signature: the token
// was verified when its request came in; exp only bounds how long the
// vault keeps it. Zero when it has none.
func expiry(token string) time.Time {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA})
	if err != nil {
		return time.Time{}
	}
	var c jwt.Claims
	if tok.UnsafeClaimsWithoutVerification(&c) != nil || c.Expiry == nil {
		return time.Time{}
	}
	return c.Expiry.Time()
}

// KeepSubjectToken seals the caller's JWT under key, owned by owner, until
// its exp; a token without exp, or already expired, is not kept.
func (v *Vault) KeepSubjectToken(ctx context.Context, key, owner string, token toolrouter.Secret, now time.Time) error {
	exp := expiry(token.Reveal())
	if exp.IsZero() || !exp.After(now) {
		return nil
	}
	return v.Put(ctx, kindSubject, key, owner, "", token.Reveal(), exp)
}

// SubjectToken is the JWT kept under key; false when none was kept or it
// expired.
func (v *Vault) SubjectToken(ctx context.Context, key string) (toolrouter.Secret, bool, error) {
	var tok string
	ok, err := v.Get(ctx, kindSubject, key, &tok)
	if err != nil || !ok {
		return toolrouter.Secret{}, false, err
	}
	return toolrouter.NewSecret(tok), true, nil
}
