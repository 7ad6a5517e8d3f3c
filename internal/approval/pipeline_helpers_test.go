package approval_test

import (
	"encoding/json"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/pipeline/pipelinetest"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// The pipeline as service.New assembles it (pipelinetest): this
// package's stages are tested through it.
type (
	rig            = pipelinetest.Rig
	toolMap        = pipelinetest.Tools
	recordingAudit = pipelinetest.RecordingAudit
)

var (
	withEntry = pipelinetest.WithEntry
)

// resultJSON is the result as the API answers it, duration aside.
func resultJSON(t *testing.T, res *toolrouter.Result) string {
	t.Helper()
	if res.DurationMS <= 0 {
		t.Errorf("duration %v", res.DurationMS)
	}
	r := *res
	r.DurationMS = 0
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
