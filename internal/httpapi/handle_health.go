package httpapi

import (
	"context"
	"github.com/rs/zerolog"
	"net/http"
	"time"
)

type health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

func handleHealthz() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		encode(w, r, http.StatusOK, health{Status: "ok"})
	}
}

// handleReadyz reports ready when the store answers (a registry is always
// loaded: a bad file never replaces the one in force); it recovers on its
// own when the store comes back.
func handleReadyz(store Pinger) http.HandlerFunc {
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
