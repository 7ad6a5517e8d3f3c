package main

import (
	"bytes"
	"strings"
	"testing"
)

// A package that builds on linux and darwin but not on windows: the
// windows check fails naming the file and line, the others pass.
func TestReportsWhatDoesNotBuildForAnOS(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-C", "testdata/unixonly", "-goos", "linux,darwin,windows", "."}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	if want := "GOOS=windows: "; !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "kill.go:9:") || !strings.Contains(stderr.String(), "Kill") {
		t.Errorf("stderr does not name windows, kill.go:9 and Kill:\n%s", &stderr)
	}
	if strings.Contains(stderr.String(), "GOOS=linux") || strings.Contains(stderr.String(), "GOOS=darwin") {
		t.Errorf("an error for linux or darwin:\n%s", &stderr)
	}
	for _, want := range []string{"GOOS=linux: ", "GOOS=darwin: "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not report %q:\n%s", want, &stdout)
		}
	}
}

func TestNoPatternIsAUsageError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(nil, &stdout, &stderr); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr:\n%s", code, &stderr)
	}
}
