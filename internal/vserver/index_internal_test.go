package vserver

import (
	"reflect"
	"testing"
)

func TestTokens(t *testing.T) {
	for in, want := range map[string][]string{
		"gh/create_issue":        {"gh", "create", "issue"},
		"getHTTPResponseCode":    {"get", "http", "response", "code"},
		"files.read-file v2":     {"file", "read", "file", "v2"},
		"List the repositories.": {"list", "repositorie"},
		"":                       nil,
	} {
		if got := tokens(in); !reflect.DeepEqual(got, want) {
			t.Errorf("tokens(%q) = %q, want %q", in, got, want)
		}
	}
}
