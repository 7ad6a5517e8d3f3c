package main

import (
	"io/fs"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name  string
		env   string
		files map[string]string
		want  int64
	}{
		{"cgroup v2", "", map[string]string{"/sys/fs/cgroup/memory.max": "536870912\n"}, 483183820},
		{"cgroup v1", "", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "1000000000\n"}, 900000000},
		{"v2 unlimited", "", map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"v1 unlimited", "", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		{"no cgroup", "", nil, 0},
		{"GOMEMLIMIT set", "400MiB", map[string]string{"/sys/fs/cgroup/memory.max": "536870912\n"}, 0},
	} {
		debug.SetMemoryLimit(1 << 62)
		got := setMemoryLimit(env(tc.env), files(tc.files))
		if got != tc.want {
			t.Errorf("%s: set %d, want %d", tc.name, got, tc.want)
		}
		if cur := debug.SetMemoryLimit(-1); tc.want > 0 && cur != tc.want || tc.want == 0 && cur != 1<<62 {
			t.Errorf("%s: runtime limit %d", tc.name, cur)
		}
	}
}

func TestSetGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	if got := setGCPercent(func(string) string { return "50" }); got != 0 {
		t.Fatalf("GOGC set: setGCPercent = %d, want 0 (left to the runtime)", got)
	}
	if cur := debug.SetGCPercent(100); cur != 100 {
		t.Fatalf("GOGC set: the percentage became %d", cur)
	}
	if got := setGCPercent(func(string) string { return "" }); got != defaultGCPercent {
		t.Fatalf("GOGC unset: setGCPercent = %d, want %d", got, defaultGCPercent)
	}
	if cur := debug.SetGCPercent(100); cur != defaultGCPercent {
		t.Fatalf("GOGC unset: the percentage is %d, want %d", cur, defaultGCPercent)
	}
}
