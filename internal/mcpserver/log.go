package mcpserver

import (
	"context"
	"log/slog"
	"slices"
)

// quieter logs the SDK's info messages (a line per session connected,
// initialized, disconnected) at debug level; warnings and errors stay.
// It drops the session ids the SDK adds: a session id is a credential
// and is never written to logs (docs/security.md "Clients").
type quieter struct{ slog.Handler }

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, demote(l))
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, demote(r.Level), r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if !secretAttr(a) {
			out.AddAttrs(a)
		}
		return true
	})
	return q.Handler.Handle(ctx, out)
}

func (q quieter) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quieter{q.Handler.WithAttrs(slices.DeleteFunc(slices.Clone(attrs), secretAttr))}
}

// secretAttr reports whether a log attribute holds a session id.
func secretAttr(a slog.Attr) bool {
	return a.Key == "session_id" || a.Key == "sessionID" || a.Key == "session"
}

func (q quieter) WithGroup(name string) slog.Handler { return quieter{q.Handler.WithGroup(name)} }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
