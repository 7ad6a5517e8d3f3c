package registry

import (
	"sort"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a registry file.
type Problem struct {
	File string
	// Line is 1-based; 0 when the problem has no place in the file.
	Line int
	// Tool is the name of the tool at fault, when there is one.
	Tool string
	// Field names the key at fault: "timeout", "headers.Authorization",
	// "input_schema/properties/msg/type", "providers[0].base_url".
	Field string
	Why   string
	// UnsetKeyEnv is the variable a client's key_env names when the
	// problem is that it is unset or empty: the service refuses to start
	// on it, `toolrouterd check` only warns (a registry is checked in CI
	// without its secrets).
	UnsetKeyEnv string
}

// String renders the problem as FILE:LINE: tool "x": field: why, leaving
// out the parts that are empty.
func (p Problem) String() string {
	var parts []string
	loc := p.File
	if p.Line > 0 {
		if loc == "" {
			loc = "line " + strconv.Itoa(p.Line)
		} else {
			loc += ":" + strconv.Itoa(p.Line)
		}
	}
	if loc != "" {
		parts = append(parts, loc)
	}
	if p.Tool != "" {
		parts = append(parts, "tool "+strconv.Quote(p.Tool))
	}
	if p.Field != "" {
		parts = append(parts, p.Field)
	}
	if p.Why != "" {
		parts = append(parts, p.Why)
	}
	return strings.Join(parts, ": ")
}

// Problems is every problem found in a registry file, in file order. It is
// the error Parse and Load return for a bad file.
type Problems []Problem

// Error lists the problems one a line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// sortByLine puts problems in file order, keeping the order of problems on
// the same line.
func (ps Problems) sortByLine() {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
}
