package pipeline_test

import "github.com/toolrouterd/toolrouterd/internal/pipeline/pipelinetest"

// The pipeline as service.New assembles it (pipelinetest): this
// package's stages are tested through it.
type (
	rig      = pipelinetest.Rig
	stubExec = pipelinetest.StubExec
)

const testRegistry = pipelinetest.Registry

var (
	inView = pipelinetest.InView
)
