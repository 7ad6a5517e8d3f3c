package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// AuditLog reads the audit trail (store.Tenancy).
type AuditLog interface {
	ListAudit(ctx context.Context, f toolrouter.AuditFilter) ([]toolrouter.AuditRecord, error)
}

// handleAudit answers GET /audit (api/openapi.yaml, operation listAudit):
// admin clients (and anyone on an open service) only, records newest first, a page of limit with a cursor
// to the next (docs/security.md "Audit trail").
func handleAudit(log AuditLog, usage Usage) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := access.FromContext(r.Context()); c != nil && !c.Admin {
			writeProblem(w, r, http.StatusForbidden, "", "GET /audit is for admin clients (admin: true in the registry's clients)")
			return
		}
		q := r.URL.Query()
		f := toolrouter.AuditFilter{Client: q.Get("client"), Tool: q.Get("tool"), Outcome: q.Get("outcome"), Limit: 100}
		for _, p := range []struct {
			name string
			to   *time.Time
		}{{"since", &f.Since}, {"until", &f.Until}} {
			if err := queryTime(q, p.name, p.to); err != nil {
				writeError(w, r, err)
				return
			}
		}
		var err error
		if f.Limit, err = pageLimit(q); err != nil {
			writeError(w, r, err)
			return
		}
		if v := q.Get("cursor"); v != "" {
			c, err := toolrouter.ParseCursor(v)
			if err != nil {
				writeError(w, r, err)
				return
			}
			f.Before = c
		}
		recs, err := log.ListAudit(r.Context(), f)
		if err != nil {
			writeError(w, r, toolrouter.StoreError(err))
			return
		}
		for i := range recs {
			recs[i].FinishedAt = recs[i].Finished()
		}
		if err := withCosts(r.Context(), usage, recs); err != nil {
			writeError(w, r, toolrouter.StoreError(err))
			return
		}
		var next *string
		if len(recs) == f.Limit {
			last := recs[len(recs)-1]
			s := toolrouter.CursorOf(last.Time, last.ID).String()
			next = &s
		}
		encode(w, r, http.StatusOK, map[string]any{"records": recs, "next_cursor": next})
	}
}
