//go:build !noplaincheck

package inputschema

// withPlainCheck puts plainCheck in front of the full validator. The
// build tag noplaincheck leaves it out: the ablation of bench/README.md's
// decision table ("Hand-written twins").
const withPlainCheck = true
