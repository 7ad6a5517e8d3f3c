package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/config"
)

// Issue 14, items 4 and 5: TOOLROUTER_WRITE_TIMEOUT and
// TOOLROUTER_MAX_BATCH_OUTPUT_BYTES have defaults and are validated.
func TestWriteTimeoutAndBatchOutput(t *testing.T) {
	clearEnv(t)
	c, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.WriteTimeout != 30*time.Second || c.MaxBatchOutputBytes != 64<<20 {
		t.Fatalf("defaults: write timeout %s, batch output %d", c.WriteTimeout, c.MaxBatchOutputBytes)
	}
	for _, tc := range []struct{ name, value, says string }{
		{"TOOLROUTER_WRITE_TIMEOUT", "", "not a valid duration"},
		{"TOOLROUTER_WRITE_TIMEOUT", "abc", "not a valid duration"},
		{"TOOLROUTER_WRITE_TIMEOUT", "0s", "outside 1s..1h"},
		{"TOOLROUTER_WRITE_TIMEOUT", "2h", "outside 1s..1h"},
		{"TOOLROUTER_MAX_BATCH_OUTPUT_BYTES", "12", "outside 1024.."},
		{"TOOLROUTER_MAX_BATCH_OUTPUT_BYTES", "-1", "outside 1024.."},
		{"TOOLROUTER_MAX_BATCH_OUTPUT_BYTES", "1e9", "not a valid integer"},
		{"TOOLROUTER_DEBUG_ADDR", "6060", "is not host:port"},
		{"TOOLROUTER_DEBUG_ADDR", "127.0.0.1:70000", "outside 0..65535"},
	} {
		clearEnv(t, tc.name, tc.value)
		_, err := config.Load()
		if err == nil || !strings.HasPrefix(err.Error(), tc.name+": ") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s=%q: %v, want an error naming it that says %q", tc.name, tc.value, err, tc.says)
		}
	}
	clearEnv(t, "TOOLROUTER_WRITE_TIMEOUT", "5s", "TOOLROUTER_MAX_BATCH_OUTPUT_BYTES", "1048576")
	if c, err := config.Load(); err != nil || c.WriteTimeout != 5*time.Second || c.MaxBatchOutputBytes != 1<<20 {
		t.Fatalf("%+v %v", c, err)
	}
}
