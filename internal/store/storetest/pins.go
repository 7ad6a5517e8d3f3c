package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

var pinTests = []struct {
	name string
	f    func(t *testing.T, b Backend, open func() store.Store, clk *Clock)
}{
	{"PinsCreateOnceAndSwapOnceAcrossReplicas", pinsCreateOnceAndSwapOnceAcrossReplicas},
	{"ReopenedStoreKeepsPins", reopenedStoreKeepsPins},
}

func samplePin(tool, digest string, at time.Time) *toolrouter.Pin {
	return &toolrouter.Pin{Server: "files", Tool: tool, Digest: digest,
		Definition: json.RawMessage(`{"description":"` + digest + `","name":"` + tool + `"}`), PinnedAt: at.UTC().Truncate(time.Millisecond)}
}

func pinsCreateOnceAndSwapOnceAcrossReplicas(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 2)
	if got, err := ss[0].ListPins(ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListPins of an empty store = %v, %v; want none", got, err)
	}
	// Two replicas pin the same tool at once: one creates it.
	var created atomic.Int32
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			ok, err := s.CreatePin(ctx, samplePin("read", []string{"aaa", "bbb"}[i], clk.Now()))
			if err != nil {
				t.Errorf("CreatePin: %v", err)
			}
			if ok {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("%d replicas created the pin, want 1", created.Load())
	}
	if ok, err := ss[0].CreatePin(ctx, samplePin("", "", clk.Now())); err != nil || !ok {
		t.Fatalf("CreatePin of the server marker = %v, %v", ok, err)
	}
	pins, err := ss[1].ListPins(ctx)
	if err != nil || len(pins) != 2 || pins[0].Tool != "" || pins[1].Tool != "read" || pins[1].Version != 1 {
		t.Fatalf("ListPins = %+v, %v; want the marker, then read at version 1", pins, err)
	}
	// Both replicas swap the pin from the version they read: one wins.
	a, bb := *pins[1], *pins[1]
	now := clk.Now().UTC().Truncate(time.Millisecond)
	a.Review = &toolrouter.PinReview{ID: "def_1", Status: toolrouter.ApprovalPending, New: json.RawMessage(`{"name":"read"}`), NewDigest: "ccc", ChangedAt: now, ToolName: "files/read"}
	bb.Digest = "ddd"
	okA, errA := ss[0].UpdatePin(ctx, &a)
	okB, errB := ss[1].UpdatePin(ctx, &bb)
	if errA != nil || errB != nil || !okA || okB {
		t.Fatalf("UpdatePin = %v, %v and %v, %v; want the first to win", okA, errA, okB, errB)
	}
	if a.Version != 2 || bb.Version != 1 {
		t.Fatalf("versions after the swaps = %d and %d, want 2 and 1", a.Version, bb.Version)
	}
	pins, err = ss[1].ListPins(ctx)
	if err != nil || len(pins) != 2 {
		t.Fatalf("ListPins = %v, %v", pins, err)
	}
	got := pins[1]
	if got.Version != 2 || got.Digest != a.Digest || got.Review == nil || got.Review.ID != "def_1" || got.Review.NewDigest != "ccc" ||
		!got.Review.ChangedAt.Equal(now) || string(got.Definition) != string(a.Definition) {
		t.Fatalf("pin after the swap = %+v (review %+v), want %+v", got, got.Review, a)
	}
	// A swap from the version read now wins again.
	got.Review.Status = toolrouter.ApprovalApproved
	if ok, err := ss[1].UpdatePin(ctx, got); err != nil || !ok || got.Version != 3 {
		t.Fatalf("UpdatePin from the current version = %v, %v (version %d)", ok, err, got.Version)
	}
	// A pin that does not exist is not updated.
	ghost := samplePin("ghost", "eee", clk.Now())
	ghost.Version = 1
	if ok, err := ss[0].UpdatePin(ctx, ghost); err != nil || ok {
		t.Fatalf("UpdatePin of a missing pin = %v, %v; want false", ok, err)
	}
	// A delete from a stale version loses; from the current one it wins.
	stale := *got
	stale.Version = 2
	if ok, err := ss[0].DeletePin(ctx, &stale); err != nil || ok {
		t.Fatalf("DeletePin from a stale version = %v, %v; want false", ok, err)
	}
	if ok, err := ss[0].DeletePin(ctx, got); err != nil || !ok {
		t.Fatalf("DeletePin from the current version = %v, %v; want true", ok, err)
	}
	if pins, err := ss[1].ListPins(ctx); err != nil || len(pins) != 1 || pins[0].Tool != "" {
		t.Fatalf("ListPins after the delete = %v, %v; want the marker only", pins, err)
	}
}

func reopenedStoreKeepsPins(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	if !b.Durable {
		t.Skip("the memory store keeps nothing across restarts")
	}
	ctx := context.Background()
	s := open()
	p := samplePin("read", "aaa", clk.Now())
	if ok, err := s.CreatePin(ctx, p); err != nil || !ok {
		t.Fatalf("CreatePin = %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	pins, err := open().ListPins(ctx)
	if err != nil || len(pins) != 1 || pins[0].Digest != "aaa" || pins[0].Version != 1 || !pins[0].PinnedAt.Equal(p.PinnedAt) {
		t.Fatalf("pins after reopening = %+v, %v", pins, err)
	}
}
