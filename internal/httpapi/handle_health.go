package httpapi

import (
	"context"
	"maps"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

type health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

// handleIndex answers GET / with where to go: a person who opens the
// service's address finds the console and the API description.
func handleIndex() http.HandlerFunc {
	index := map[string]any{"service": "toolrouterd", "links": map[string]string{
		"console": "/ui", "openapi": "/openapi.yaml", "health": "/healthz", "ready": "/readyz", "metrics": "/metrics"}}
	return func(w http.ResponseWriter, r *http.Request) {
		encode(w, r, http.StatusOK, index)
	}
}

func handleHealthz() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		encode(w, r, http.StatusOK, health{Status: "ok"})
	}
}

// handleReadyz reports ready when the store answers (a registry is always
// loaded: a bad file never replaces the one in force); it recovers on its
// own when the store comes back. The circuits that are not closed are
// listed among the checks, without making it unready: the replica still
// serves every other backend.
func handleReadyz(store Pinger, circuits Circuits) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		h := health{Status: "ok", Checks: map[string]string{"store": "ok", "registry": "ok"}}
		if err := store.Ping(ctx); err != nil {
			// The cause (hosts, users, database names) goes to the log, not
			// to an unauthenticated endpoint.
			limitedLog(r, zerolog.WarnLevel, "readiness").Str("error", clip(err.Error())).Msg("readiness: store unreachable")
			h.Status, h.Checks["store"] = "unavailable", "unreachable"
		}
		if circuits != nil {
			maps.Copy(h.Checks, circuits.Checks())
		}
		status := http.StatusOK
		if h.Status != "ok" {
			status = http.StatusServiceUnavailable
		}
		encode(w, r, status, h)
	}
}

func handleSpec(spec []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(spec)
	}
}

// handleResourceMetadata serves the OAuth 2.0 Protected Resource Metadata
// (RFC 9728) of the resource at path ("" for the whole service, "/mcp"):
// the resource's URL, the issuer as its authorization server, and bearer
// tokens in the Authorization header only.
func handleResourceMetadata(issuer, path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if issuer == "" {
			writeProblem(w, r, http.StatusNotFound, "", "no protected resource metadata: JWT bearer tokens are off (TOOLROUTER_JWT_ISSUER is not set)")
			return
		}
		w.Header().Set("Cache-Control", "max-age=3600")
		encode(w, r, http.StatusOK, map[string]any{
			"resource":                 resourceURL(r, path),
			"authorization_servers":    []string{issuer},
			"bearer_methods_supported": []string{"header"},
			"resource_name":            "toolrouterd",
		})
	}
}
