package e2e_test

import (
	"path/filepath"
	"testing"
)

// TestUnknownResultNamesTheID: GET /results/{id} of an unknown id answers
// 404 naming the id asked for, not the store's per-client key (client
// name and a control character) behind it.
func TestUnknownResultNamesTheID(t *testing.T) {
	t.Parallel()
	tool := newBodyTool(t)
	rep := startReplicas(t, 1, approvalRegistry(tool.srv.URL), "sqlite://"+filepath.Join(t.TempDir(), "r.db"))[0]
	for _, as := range [][]string{asAgent, asReviewer} {
		r := do(t, "GET", rep.URL()+"/results/tc_nope?client=agent", nil, as...)
		if got := r.JSON(t)["detail"]; r.Status != 404 || got != `tool call "tc_nope" not found` {
			t.Fatalf("GET /results/tc_nope as %s: %d %q", as[1], r.Status, got)
		}
	}
}
