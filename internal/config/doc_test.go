package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/toolrouterd/toolrouterd/internal/config"
)

// TestConfigurationTableHasEveryVariable: docs/configuration.md's table has
// a row for every variable Load reads, with its default, and no row for a
// variable Load does not read.
func TestConfigurationTableHasEveryVariable(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // variable → its row's cells
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `TOOLROUTER_") || len(cells) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`(TOOLROUTER_[A-Z0-9_]+)`").FindAllStringSubmatch(cells[0], -1) {
			rows[m[1]] = cells
		}
	}
	read := map[string]bool{}
	for _, v := range config.Vars() {
		read[v.Name] = true
		cells, ok := rows[v.Name]
		if !ok {
			t.Errorf("Load reads %s; docs/configuration.md's table has no row for it", v.Name)
			continue
		}
		if v.Default != "" && !strings.Contains(cells[1], "`"+v.Default+"`") {
			t.Errorf("docs/configuration.md: %s's default is %q, its row says %s", v.Name, v.Default, cells[1])
		}
	}
	if len(read) < 20 {
		t.Fatalf("Load reads %d variables; the scan is broken", len(read))
	}
	// Read by internal/telemetry with the OTEL_* variables, not by Load.
	read["TOOLROUTER_TRACE_CONTENT"], read["TOOLROUTER_TRACE_STORE"] = true, true
	for key := range rows {
		if !read[key] {
			t.Errorf("docs/configuration.md has a row for %s, which Load does not read", key)
		}
	}
}
