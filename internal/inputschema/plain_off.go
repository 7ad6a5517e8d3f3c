//go:build noplaincheck

package inputschema

// withPlainCheck is off in this build (tag noplaincheck): every call is
// checked by the full validator alone, for the ablation of bench/README.md's
// decision table.
const withPlainCheck = false
