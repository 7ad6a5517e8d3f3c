package poll_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	n := 0
	poll.Until(t, 10*time.Second, func() error {
		if n++; n < 3 {
			return fmt.Errorf("n = %d", n)
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

// fatalT records Fatalf and ends the goroutine, as testing.T does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func TestUntilFailsWithTheLastError(t *testing.T) {
	t.Parallel()
	ft := &fatalT{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		poll.Until(ft, 30*time.Millisecond, func() error { return errors.New("not yet") })
	}()
	wg.Wait()
	if !strings.Contains(ft.msg, "not yet") || !strings.Contains(ft.msg, "30ms") {
		t.Fatalf("failure %q, want the timeout and the last error", ft.msg)
	}
}
