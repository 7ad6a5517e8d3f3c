package httpapi_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolrouterd/toolrouterd/api"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestPlanIDSchemasAreValidPlanID: the HTTP edge refuses a plan_id by the
// spec's schemas (POST /route, /route/batch, a run's context, GET /runs),
// the router and /mcp by toolrouter.ValidPlanID; both must be one rule, or
// a plan id the spec admits fails every call of its plan (a run's after its
// first model turn).
func TestPlanIDSchemasAreValidPlanID(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*openapi3.Schema{}
	for _, name := range []string{"RouteRequest", "BatchRequest", "ActorContext"} {
		schemas[name] = doc.Components.Schemas[name].Value.Properties["plan_id"].Value
	}
	if p := doc.Paths.Value("/runs").Get.Parameters.GetByInAndName("query", "plan_id"); p != nil {
		schemas["GET /runs"] = p.Schema.Value
	}
	if len(schemas) != 4 {
		t.Fatalf("plan_id schemas found: %v", schemas)
	}
	ids := []string{"", "p", "plan-1 ü", strings.Repeat("é", toolrouter.MaxPlanID), strings.Repeat("é", toolrouter.MaxPlanID+1),
		strings.Repeat("a", toolrouter.MaxPlanID+1), "a\u0085", "a\u2028"}
	for c := range 0x80 {
		ids = append(ids, "a"+string(rune(c)))
	}
	for name, s := range schemas {
		for _, id := range ids {
			err := s.VisitJSON(id)
			if want := toolrouter.ValidPlanID(id); (err == nil) != want {
				t.Errorf("%s: plan_id %.20q: the spec says %v, ValidPlanID %v", name, id, err, want)
			}
		}
	}
}
