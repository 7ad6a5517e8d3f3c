package guardrail_test

import "github.com/toolrouterd/toolrouterd/internal/pipeline/pipelinetest"

// The pipeline as service.New assembles it (pipelinetest): this
// package's stages are tested through it.

var (
	withRelay     = pipelinetest.WithRelay
	guardedRouter = pipelinetest.Guarded
)
