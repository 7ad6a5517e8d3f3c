// Package poll is for tests that wait for a condition another goroutine or
// process makes true: they poll it with a deadline, so that a sleep never
// stands in for synchronisation and a slow machine only makes them slower.
package poll

import (
	"fmt"
	"testing"
	"time"
)

// Until calls cond until it returns nil, at intervals growing from 5 ms to
// 100 ms, and fails t with cond's last error when timeout passes first.
// cond runs on the test's goroutine, so it may call t.Fatal itself.
func Until(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Wait(timeout, cond); err != nil {
		t.Fatal(err)
	}
}

// Wait is Until for a caller that reports the failure itself: it returns
// nil once cond does, else cond's last error when timeout passes.
func Wait(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still not so after %v: %w", timeout, err)
		}
		time.Sleep(wait) // the polling interval, not synchronisation
	}
}
