package configtest_test

import (
	"os"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/config/configtest"
)

// TestSetenvClearsAndRestores: inside the subtest only the given
// TOOLROUTER_ variables are set; after it the old values are back.
func TestSetenvClearsAndRestores(t *testing.T) {
	t.Setenv("TOOLROUTER_ADDR", "127.0.0.1:1")
	t.Setenv("TOOLROUTER_LOG_LEVEL", "debug")
	t.Run("inside", func(t *testing.T) {
		configtest.Setenv(t, "TOOLROUTER_STORE", "memory://")
		if _, ok := os.LookupEnv("TOOLROUTER_ADDR"); ok {
			t.Error("TOOLROUTER_ADDR still set")
		}
		if _, ok := os.LookupEnv("TOOLROUTER_LOG_LEVEL"); ok {
			t.Error("TOOLROUTER_LOG_LEVEL still set")
		}
		if v := os.Getenv("TOOLROUTER_STORE"); v != "memory://" {
			t.Errorf("TOOLROUTER_STORE = %q", v)
		}
	})
	if os.Getenv("TOOLROUTER_ADDR") != "127.0.0.1:1" || os.Getenv("TOOLROUTER_LOG_LEVEL") != "debug" {
		t.Error("values not restored after the subtest")
	}
	if _, ok := os.LookupEnv("TOOLROUTER_STORE"); ok {
		t.Error("TOOLROUTER_STORE left set after the subtest")
	}
}
