package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Usage reads the spend ledger (store.Spend): GET /usage's groups, and
// the costs GET /audit shows.
type Usage interface {
	Usage(ctx context.Context, f toolrouter.UsageFilter) ([]toolrouter.UsageRow, error)
	Costs(ctx context.Context, keys []toolrouter.SpendKey) (map[string]toolrouter.Cost, error)
}

// handleUsage answers GET /usage (api/openapi.yaml, operation getUsage;
// docs/costs.md "Reports"): the ledger's totals in [from, to) by
// group_by, a client's own (an admin's: everyone's, or client's), a page
// of limit groups with a cursor to the next.
func handleUsage(u Usage, now func() time.Time) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if u == nil {
			writeError(w, r, toolrouter.Errorf(toolrouter.EUNAVAILABLE, "this server keeps no spend ledger"))
			return
		}
		q := r.URL.Query()
		t := now().UTC()
		f := toolrouter.UsageFilter{GroupBy: "client", From: toolrouter.PeriodStart(toolrouter.PeriodMonth, t), To: t, Limit: 100}
		if v := q.Get("group_by"); v != "" {
			f.GroupBy = v
		}
		switch c := access.FromContext(r.Context()); {
		case c != nil && !c.Admin:
			if v := q.Get("client"); v != "" && v != c.Name {
				writeProblem(w, r, http.StatusForbidden, "client", "a client sees its own spend; client= is for admin clients")
				return
			}
			f.Client = c.Name
		default:
			f.Client = q.Get("client")
		}
		for _, p := range []struct {
			name string
			to   *time.Time
		}{{"from", &f.From}, {"to", &f.To}} {
			if err := queryTime(q, p.name, p.to); err != nil {
				writeError(w, r, err)
				return
			}
		}
		if !f.From.Before(f.To) {
			writeError(w, r, toolrouter.Invalid("to", "to: must be after from"))
			return
		}
		var err error
		if f.Limit, err = pageLimit(q); err != nil {
			writeError(w, r, err)
			return
		}
		f.After = q.Get("cursor")
		rows, err := u.Usage(r.Context(), f)
		if err != nil {
			writeError(w, r, toolrouter.StoreError(err))
			return
		}
		var next *string
		if len(rows) == f.Limit {
			c := rows[len(rows)-1].Cursor()
			next = &c
		}
		encode(w, r, http.StatusOK, map[string]any{"group_by": f.GroupBy, "from": f.From.UTC(), "to": f.To.UTC(), "rows": rows, "next_cursor": next})
	}
}

// withCosts sets the cost of each record of a call from the spend ledger
// (the audit trail keeps no amounts of its own: the ledger is the one
// account, so /audit, /usage and the limits agree).
func withCosts(ctx context.Context, u Usage, recs []toolrouter.AuditRecord) error {
	if u == nil {
		return nil
	}
	// The ledger keys a call's entry by client and tc_ id, and its start:
	// the record's time.
	var keys []toolrouter.SpendKey
	for _, r := range recs {
		if r.ToolCallID != "" && r.Cost == nil {
			keys = append(keys, toolrouter.SpendKey{ID: toolrouter.ScopedKey(r.Client, r.ToolCallID), At: r.Time})
		}
	}
	if len(keys) == 0 {
		return nil
	}
	costs, err := u.Costs(ctx, keys)
	if err != nil {
		return err
	}
	for i := range recs {
		if c, ok := costs[toolrouter.ScopedKey(recs[i].Client, recs[i].ToolCallID)]; ok && recs[i].Cost == nil {
			c := c
			recs[i].Cost = &c
		}
	}
	return nil
}
