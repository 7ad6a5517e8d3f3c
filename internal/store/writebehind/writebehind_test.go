package writebehind_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
)

// TestMain fails the package when a test leaves a goroutine running: the
// package starts goroutines (goleak reads every goroutine's stack after
// the tests, which a hand-written count cannot name).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Writes queued while a commit runs are committed together in the next
// one, in order, and Close commits what is left.
func TestGroupsWritesAndFlushesOnClose(t *testing.T) {
	var mu sync.Mutex
	var commits [][]string
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	w := writebehind.New(func(_ context.Context, ws []writebehind.Write) error {
		mu.Lock()
		var g []string
		for _, x := range ws {
			g = append(g, x.SQL)
		}
		commits = append(commits, g)
		first := len(commits) == 1
		mu.Unlock()
		if first {
			started <- struct{}{}
			<-release
		}
		return nil
	}, 100, 100)
	ctx := context.Background()
	if err := w.Add(ctx, writebehind.Write{SQL: "a"}); err != nil {
		t.Fatal(err)
	}
	<-started // the first commit is running: the next writes wait together
	for _, s := range []string{"b", "c", "d"} {
		if err := w.Add(ctx, writebehind.Write{SQL: s}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	w.Close()
	if err := w.Add(ctx, writebehind.Write{SQL: "e"}); !errors.Is(err, writebehind.ErrClosed) {
		t.Fatalf("Add after Close: %v, want ErrClosed", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(commits) != 2 || len(commits[1]) != 3 || commits[1][0] != "b" || commits[1][2] != "d" {
		t.Fatalf("commits %v, want [[a] [b c d]]", commits)
	}
}

// A full queue makes Add wait (it gives up when its ctx ends), and
// AddWait reports the commit's error.
func TestBackpressureAndErrors(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	boom := errors.New("boom")
	n := 0
	w := writebehind.New(func(context.Context, []writebehind.Write) error {
		n++
		if n == 1 {
			started <- struct{}{}
			<-release
			return nil
		}
		return boom
	}, 2, 10)
	ctx := context.Background()
	_ = w.Add(ctx, writebehind.Write{SQL: "a"})
	<-started
	_ = w.Add(ctx, writebehind.Write{SQL: "b"})
	_ = w.Add(ctx, writebehind.Write{SQL: "c"}) // queue (2) full now
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Add(cctx, writebehind.Write{SQL: "d"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Add on a full queue: %v, want to wait until ctx ends", err)
	}
	close(release)
	if err := w.AddWait(ctx, writebehind.Write{SQL: "e"}); !errors.Is(err, boom) {
		t.Fatalf("AddWait: %v, want the commit's error", err)
	}
	w.Close()
}

// The statements of one Add are committed together, even when a commit
// takes a single write (maxBatch 1): never one without the others.
func TestStatementsOfOneWriteStayTogether(t *testing.T) {
	var mu sync.Mutex
	var commits [][]string
	w := writebehind.New(func(_ context.Context, ws []writebehind.Write) error {
		mu.Lock()
		defer mu.Unlock()
		var g []string
		for _, x := range ws {
			g = append(g, x.SQL)
		}
		commits = append(commits, g)
		return nil
	}, 100, 1)
	ctx := context.Background()
	for _, s := range []string{"a", "b", "c"} {
		if err := w.Add(ctx, writebehind.Write{SQL: s + "1"}, writebehind.Write{SQL: s + "2"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddWait(ctx, writebehind.Write{SQL: "d1"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	mu.Lock()
	defer mu.Unlock()
	want := [][]string{{"a1", "a2"}, {"b1", "b2"}, {"c1", "c2"}, {"d1"}}
	if !reflect.DeepEqual(commits, want) {
		t.Fatalf("commits %v, want %v", commits, want)
	}
}

// Group puts the rows of each Row statement together in queue order,
// keeps only the last row of a Key, and leaves the other writes in order.
func TestGroup(t *testing.T) {
	ws := []writebehind.Write{
		{SQL: "r", Row: true, Key: "k1", Args: []any{1}},
		{SQL: "a", Row: true, Args: []any{2}},
		{SQL: "u", Args: []any{3}},
		{SQL: "r", Row: true, Key: "k2", Args: []any{4}},
		{SQL: "a", Row: true, Args: []any{5}},
		{SQL: "r", Row: true, Key: "k1", Args: []any{6}},
		{SQL: "u", Args: []any{7}},
	}
	rows, others := writebehind.Group(ws)
	want := []writebehind.Rows{{SQL: "a", Args: [][]any{{2}, {5}}}, {SQL: "r", Args: [][]any{{4}, {6}}}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	if len(others) != 2 || others[0].Args[0] != 3 || others[1].Args[0] != 7 {
		t.Errorf("others %v, want u(3), u(7)", others)
	}
}

// With Linger, a commit nobody waits for waits for more writes, until the
// batch is full or a waited write (a Flush here) arrives, which ends it.
func TestLinger(t *testing.T) {
	commits := make(chan []string, 10)
	w := writebehind.New(func(_ context.Context, ws []writebehind.Write) error {
		var g []string
		for _, x := range ws {
			g = append(g, x.SQL)
		}
		commits <- g
		return nil
	}, 100, 3)
	w.Linger = time.Hour
	ctx := context.Background()
	for _, s := range []string{"a", "b", "c", "d"} {
		if err := w.Add(ctx, writebehind.Write{SQL: s}); err != nil {
			t.Fatal(err)
		}
	}
	// a, b, c fill a batch (3): committed without waiting for the hour.
	if g := <-commits; !reflect.DeepEqual(g, []string{"a", "b", "c"}) {
		t.Fatalf("first commit %v, want [a b c]", g)
	}
	// d lingers until the Flush, which joins its commit.
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if g := <-commits; !reflect.DeepEqual(g, []string{"d"}) {
		t.Fatalf("second commit %v, want [d]", g)
	}
	w.Close()
	if len(commits) != 0 {
		t.Fatalf("extra commits: %v", <-commits)
	}
}
