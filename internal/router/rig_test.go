package router_test

import "github.com/toolrouterd/toolrouterd/internal/pipeline/pipelinetest"

// rig is the pipeline as service.New assembles it (pipelinetest).
type rig = pipelinetest.Rig
