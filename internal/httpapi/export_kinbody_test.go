package httpapi

import "testing"

// KinBody reports the ablation build (-tags kinbody) to the external tests.
const KinBody = kinBody

// KinBodyAnswers is, for the operation op ("POST /route"), the bodies of
// the differential test (bodyCorpus) and kin-openapi's check of a body:
// whether it passes, and the 400's field and detail when it does not.
func KinBodyAnswers(t testing.TB, op string) (bodies []string, kin func(body string) (ok bool, field, detail string)) {
	ob := bodyOps(t)[op]
	if ob == nil {
		t.Fatalf("no body operation %s", op)
	}
	return bodyCorpus(op, ob), func(body string) (bool, string, string) {
		a := kinAnswer(ob, []byte(body))
		return a.ok, a.field, a.detail
	}
}
