//go:build !kinbody

package httpapi

// kinBody: request bodies are checked by their compiled schema (bodySchema)
// and decoded once into their typed request; -tags kinbody builds the
// kin-openapi check back in (the ablation of issue 37).
const kinBody = false
