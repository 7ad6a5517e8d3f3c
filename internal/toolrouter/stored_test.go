package toolrouter_test

import (
	"encoding/json"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// A stored run keeps its resume state, which its API form never shows.
func TestStoredRunKeepsResume(t *testing.T) {
	t.Parallel()
	run := &toolrouter.Run{RunID: "run_1", Status: toolrouter.RunAwaitingApproval, Resume: json.RawMessage(`{"iteration":2}`)}
	b, err := toolrouter.EncodeStored(run)
	if err != nil {
		t.Fatal(err)
	}
	got, err := toolrouter.DecodeStored(b)
	if err != nil || got.RunID != "run_1" || got.Status != toolrouter.RunAwaitingApproval || string(got.Resume) != `{"iteration":2}` {
		t.Fatalf("%v %+v from %s", err, got, b)
	}
	api, _ := json.Marshal(run)
	var m map[string]any
	json.Unmarshal(api, &m)
	if _, ok := m["resume"]; ok {
		t.Fatalf("the API form shows the resume state: %s", api)
	}
}
