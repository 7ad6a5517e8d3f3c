package memory

import (
	"bytes"
	"context"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// TestArena: records read back as written, across chunks, past a
// chunk's size and adopted; a chunk is dropped once every record in it is freed, so
// a FIFO of a bounded number of records keeps a bounded number of chunks.
func TestArena(t *testing.T) {
	var a arena
	type kept struct {
		ref  blobRef
		want []byte
	}
	var fifo []kept
	for i := range 20_000 {
		rec := bytes.Repeat([]byte{byte(i)}, 100+i%300)
		switch i % 5000 {
		case 1:
			rec = bytes.Repeat([]byte{'x'}, 3*arenaChunkSize) // larger than a chunk
		case 2:
			big := bytes.Repeat([]byte{'y'}, 2*arenaChunkSize) // adopted: a chunk of its own, between small records
			fifo = append(fifo, kept{a.adopt(big), big})
		}
		fifo = append(fifo, kept{a.put([]byte("h"), strconv.Itoa(i), rec), append(append([]byte("h"), strconv.Itoa(i)...), rec...)})
		if len(fifo) > 1000 {
			a.free(fifo[0].ref)
			fifo = fifo[1:]
		}
		if i%997 == 0 {
			for _, k := range fifo {
				if got := a.get(k.ref); !bytes.Equal(got, k.want) {
					t.Fatalf("record %d read back as %q", k.ref.chunk, got)
				}
			}
		}
	}
	// 1,000 records of at most ~3 chunks' bytes each at the end: the
	// chunks they span, not the 20,000 written.
	if n := a.size(); n > 2*1000*400+4*arenaChunkSize+arenaChunkSize*3 {
		t.Errorf("arena keeps %d bytes for 1000 records of at most 400 bytes", n)
	}
	for _, k := range fifo {
		a.free(k.ref)
	}
	if len(a.chunks) != 1 {
		t.Errorf("%d chunks kept with no record", len(a.chunks))
	}
}

// TestResultOfOtherKey: a key whose fixed-size key is another's (the
// index is planted, as two colliding hashes would make it) does not read
// the other's result.
func TestResultOfOtherKey(t *testing.T) {
	m := New()
	m.saveResult("a", []byte(`{"tool_call_id":"a"}`))
	if b, ok := m.result("a"); !ok || string(b) != `{"tool_call_id":"a"}` {
		t.Fatalf("result a: %q %v", b, ok)
	}
	m.res.index[m.hashKey("b")] = m.res.index[m.hashKey("a")]
	if b, ok := m.result("b"); ok {
		t.Errorf("result b read a's: %q", b)
	}
}

// TestNothingToScan: what the store keeps for 20,000 routed calls (a
// result, an audit record and a spend ledger entry each) adds almost nothing to the heap the
// garbage collector scans (issue 37: on one core a cycle's mark work was
// the store's size, ~300 bytes scanned per call kept).
func TestNothingToScan(t *testing.T) {
	scan := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	m := New()
	ctx := context.Background()
	before := scan()
	for i := range int64(20_000) {
		id, _ := toolrouter.ToolCallID("gc", i)
		res := &toolrouter.Result{ToolCallID: id, PlanID: "gc", Sequence: i, ToolName: "test/echo", Success: true}
		seq := i
		rec := toolrouter.AuditRecord{Client: "client-" + id[:8], PlanID: "gc", Sequence: &seq, ToolCallID: id, Tool: "test/echo",
			Outcome: toolrouter.AuditSuccess, Guardrails: []toolrouter.GuardrailDecision{{Name: "g" + id[:4], Decision: "allow"}}}
		rec.Spend = &toolrouter.SpendEntry{ID: id, At: time.Now(), Client: rec.Client, Tool: "test/echo", Unpriced: true}
		if err := m.SaveResult(ctx, res, rec); err != nil {
			t.Fatal(err)
		}
	}
	after := scan()
	runtime.KeepAlive(m)
	grown := int64(after) - int64(before)
	t.Logf("scanned heap grew by %d bytes for 20,000 calls kept", grown)
	if grown > 1<<20 {
		t.Errorf("scanned heap grew by %d bytes for 20,000 calls kept (%d per call)", grown, grown/20_000)
	}
}

// TestBigResultNotCopied: a big result's encoded bytes are kept as they
// were given, not copied (a big tool output is not held twice while it is
// stored: TestAbuseBigOutputsUnderMemoryLimit's peak RSS).
func TestBigResultNotCopied(t *testing.T) {
	m := New()
	b := bytes.Repeat([]byte{'b'}, bigResult)
	m.saveResult("big", b)
	m.saveResult("small", []byte("{}"))
	got, ok := m.result("big")
	if !ok || !bytes.Equal(got, b) {
		t.Fatalf("big result read back as %d bytes, %v", len(got), ok)
	}
	if &got[0] != &b[0] {
		t.Error("big result copied")
	}
	if s, ok := m.result("small"); !ok || string(s) != "{}" {
		t.Errorf("small result read back as %q, %v", s, ok)
	}
}
