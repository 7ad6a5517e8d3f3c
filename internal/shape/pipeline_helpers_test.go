package shape_test

import "github.com/toolrouterd/toolrouterd/internal/pipeline/pipelinetest"

// The pipeline as service.New assembles it (pipelinetest): this
// package's stages are tested through it.
type (
	rig            = pipelinetest.Rig
	stubExec       = pipelinetest.StubExec
	toolMap        = pipelinetest.Tools
	recordingAudit = pipelinetest.RecordingAudit
)

const testRegistry = pipelinetest.Registry

var (
	inView        = pipelinetest.InView
	withBudget    = pipelinetest.WithBudget
	withEntry     = pipelinetest.WithEntry
	withRelay     = pipelinetest.WithRelay
	guardedRouter = pipelinetest.Guarded
)
