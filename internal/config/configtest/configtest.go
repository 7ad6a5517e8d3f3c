// Package configtest sets the process environment that config.Load reads,
// for one test.
package configtest

import (
	"os"
	"strings"
	"testing"
)

// Setenv unsets every TOOLROUTER_ variable of the process for the rest of
// t, then sets the given name, value pairs; t's cleanup restores them all.
// Like t.Setenv, which it uses, it panics in a parallel test (the process
// environment is shared).
func Setenv(t testing.TB, pairs ...string) {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatalf("configtest.Setenv: %d arguments, want name, value pairs", len(pairs))
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TOOLROUTER_") {
			t.Setenv(name, "") // registers the restoring of its value
			if err := os.Unsetenv(name); err != nil {
				t.Fatalf("unset %s: %v", name, err)
			}
		}
	}
	for i := 0; i < len(pairs); i += 2 {
		t.Setenv(pairs[i], pairs[i+1])
	}
}
