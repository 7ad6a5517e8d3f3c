package features_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain sets the configuration the scenarios' services read as
// toolrouterd does (config.Load, from the process environment): the
// defaults, with a memory store. The TOOLROUTER_ variables of the shell
// that runs the tests are unset so none of them leaks in.
func TestMain(m *testing.M) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TOOLROUTER_") {
			os.Unsetenv(name)
		}
	}
	if err := os.Setenv("TOOLROUTER_STORE", "memory://"); err != nil {
		fmt.Fprintln(os.Stderr, "features: set TOOLROUTER_STORE:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
