package httpapi

import (
	"net/url"
	"strconv"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// pageLimit is a list's limit query parameter: 100 when absent, else an
// integer in 1..1000 (the lists of GET /audit, /approvals, /runs, /usage).
func pageLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, toolrouter.Invalid("limit", "limit: must be an integer in 1..1000, got %q", v)
	}
	return n, nil
}

// queryTime sets *t to the RFC 3339 time of the query parameter name,
// when it is given.
func queryTime(q url.Values, name string, t *time.Time) error {
	v := q.Get(name)
	if v == "" {
		return nil
	}
	p, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return toolrouter.Invalid(name, "%s: want an RFC 3339 time such as 2025-06-01T00:00:00Z, got %q", name, v)
	}
	*t = p
	return nil
}
