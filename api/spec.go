// Package api embeds the OpenAPI description of toolrouterd's HTTP API.
package api

import _ "embed"

// Spec is api/openapi.yaml, served as-is at /openapi.yaml and used to
// validate requests.
//
//go:embed openapi.yaml
var Spec []byte
