//go:build kinbody

package httpapi

// kinBody: the ablation of issue 37 (bench/README.md decision table): every
// request body is decoded into a generic value and checked by kin-openapi's
// VisitJSON, then set into its typed request.
const kinBody = true
