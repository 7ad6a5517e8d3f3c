package store

import (
	"context"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/store/postgres"
)

// OpenStarting is Open for the service: a postgres:// store whose server
// is down does not fail it but connects in the background, retrying with
// backoff (postgres.OpenLazy; onRetry hears each failed attempt), so the
// service starts and reports not ready until it is reachable. Other
// stores open as with Open.
func OpenStarting(ctx context.Context, url string, onRetry func(attempt int, err error)) (Store, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		s, err := postgres.OpenLazy(url, onRetry)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return Open(ctx, url)
}
