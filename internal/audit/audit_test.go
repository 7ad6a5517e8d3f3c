package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/audit"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

type appender struct{ n int }

func (a *appender) AppendAudit(_ context.Context, recs []toolrouter.AuditRecord) error {
	a.n += len(recs)
	return nil
}

// lookups counts the values asked of a context by the type of their key.
type lookups struct {
	context.Context
	asked map[string]int
}

func (c *lookups) Value(key any) any {
	c.asked[fmt.Sprintf("%T", key)]++
	return c.Context.Value(key)
}

// TestRecordLogsNothingAboveInfo: with the log above info (TOOLROUTER_LOG_LEVEL
// =warn, as bench-compare serves), a call's audit record is stored and no
// log line's work is done: neither its request id nor its span is looked
// up (issue 37); at info the line is written with its request id.
func TestRecordLogsNothingAboveInfo(t *testing.T) {
	for _, level := range []zerolog.Level{zerolog.WarnLevel, zerolog.InfoLevel} {
		var out bytes.Buffer
		st := &appender{}
		trail := &audit.Trail{Store: st, Log: zerolog.New(&out).Level(level)}
		ctx := &lookups{Context: toolrouter.WithRequestID(context.Background(), "req-1"), asked: map[string]int{}}
		trail.Record(ctx, toolrouter.AuditRecord{ToolCallID: "tc_1", Outcome: toolrouter.AuditSuccess})
		if st.n != 1 {
			t.Fatalf("%s: %d records stored, want 1", level, st.n)
		}
		asked := ctx.asked["toolrouter.requestIDKey"]
		switch level {
		case zerolog.WarnLevel:
			if asked != 0 || out.Len() != 0 {
				t.Errorf("warn: request id looked up %d times, log %q; want no lookup, no line", asked, out.String())
			}
		default:
			if asked == 0 || !strings.Contains(out.String(), `"request_id":"req-1"`) {
				t.Errorf("info: request id looked up %d times, log %q; want the line with its request id", asked, out.String())
			}
		}
	}
}
