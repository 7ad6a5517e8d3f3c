package toolrouter

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Cursor is where a page of a list sorted newest first (by time, then id)
// ended: the time and id of its last item. The next page holds the items
// strictly before it, so items that share a time are neither repeated nor
// skipped. The zero Cursor is the first page.
type Cursor struct {
	Time time.Time
	ID   string
}

// IsZero reports whether c is the first page's.
func (c Cursor) IsZero() bool { return c.ID == "" }

// String is the cursor as GET /audit and GET /approvals write it in
// next_cursor: the time in Unix nanoseconds, "_", the id.
func (c Cursor) String() string {
	return strconv.FormatInt(c.Time.UnixNano(), 10) + "_" + c.ID
}

// cursorID is what an item id in a cursor may hold.
var cursorID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ParseCursor reads a cursor that String wrote; its error is an Invalid
// one naming the parameter "cursor".
func ParseCursor(s string) (Cursor, error) {
	bad := Invalid("cursor", "cursor: must be the next_cursor of a previous page, got %q", s)
	ns, id, ok := strings.Cut(s, "_")
	if !ok || !cursorID.MatchString(id) {
		return Cursor{}, bad
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return Cursor{}, bad
	}
	return Cursor{Time: time.Unix(0, n).UTC(), ID: id}, nil
}

// CursorOf is the cursor after an item of time t and numeric id.
func CursorOf(t time.Time, id int64) Cursor {
	return Cursor{Time: t, ID: strconv.FormatInt(id, 10)}
}

// IntID is the cursor's id as a number (stores whose ids are numbers);
// an error when it is not one.
func (c Cursor) IntID() (int64, error) {
	n, err := strconv.ParseInt(c.ID, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("cursor id %q is not a record id", c.ID)
	}
	return n, nil
}

// Before reports whether an item of time t and id comes after c's in a
// list sorted newest first (its next page holds it); ids compare as
// strings, or as numbers when both are.
func (c Cursor) Before(t time.Time, id string) bool {
	if c.IsZero() {
		return true
	}
	if !t.Equal(c.Time) {
		return t.Before(c.Time)
	}
	a, errA := strconv.ParseInt(id, 10, 64)
	b, errB := strconv.ParseInt(c.ID, 10, 64)
	if errA == nil && errB == nil {
		return a < b
	}
	return id < c.ID
}
