package main

import (
	"bytes"
	"strings"
	"testing"
)

// A package that builds on linux but not on windows: the windows check
// fails naming the file and line, linux's passes. (Two OSes: each is the
// standard library's part under the package type-checked from source,
// seconds of CPU under -race.)
func TestReportsWhatDoesNotBuildForAnOS(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-C", "testdata/unixonly", "-goos", "linux,windows", "."}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	if want := "GOOS=windows: "; !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "kill.go:9:") || !strings.Contains(stderr.String(), "Kill") {
		t.Errorf("stderr does not name windows, kill.go:9 and Kill:\n%s", &stderr)
	}
	if strings.Contains(stderr.String(), "GOOS=linux") {
		t.Errorf("an error for linux:\n%s", &stderr)
	}
	if !strings.Contains(stdout.String(), "GOOS=linux: ") {
		t.Errorf("stdout does not report linux:\n%s", &stdout)
	}
}

func TestNoPatternIsAUsageError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(nil, &stdout, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr:\n%s", code, &stderr)
	}
}
