package service

import (
	"context"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/agent"
	"github.com/toolrouterd/toolrouterd/internal/audit"
	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// newLimiter is the rate limiter of the clients (docs/security.md "Clients"): with
// PostgreSQL the counters live in the store, shared by every replica; with
// SQLite or memory (one machine) each process counts in memory.
func (s *Service) newLimiter(st store.Store) audit.Taker {
	if StoreKind(s.cfg.Store) == "postgres" || StoreKind(s.cfg.Store) == "postgresql" {
		l := access.NewShared(st)
		l.OnLimited = s.metrics.RateLimited
		return l
	}
	l := access.NewWindow()
	l.OnLimited = s.metrics.RateLimited
	return l
}

// newTurnLimiter counts the model turns of the clients' runs against their
// model_turns (docs/security.md "Model scopes"), shared or in memory as
// newLimiter.
func (s *Service) newTurnLimiter(st store.Store) agent.TurnLimiter {
	if StoreKind(s.cfg.Store) == "postgres" || StoreKind(s.cfg.Store) == "postgresql" {
		l := access.NewShared(st)
		l.ModelTurns = true
		return l
	}
	l := access.NewWindow()
	l.ModelTurns = true
	return l
}

// SweepAudit deletes audit records older than TOOLROUTER_AUDIT_RETENTION
// (and rate counters of windows long past) every interval until ctx ends,
// in batches of 1,000 so no statement holds the table long. Any replica
// may sweep: deleting is idempotent.
func (s *Service) SweepAudit(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweepAudit(ctx, time.Now())
		}
	}
}

func (s *Service) sweepAudit(ctx context.Context, now time.Time) {
	total := 0
	for range 100 { // at most 100,000 a round; the next round goes on
		n, err := s.Store.PurgeAudit(ctx, now.Add(-s.cfg.AuditRetention), 1000)
		if err != nil {
			s.log.Warn().Err(err).Msg("purge audit records")
			return
		}
		total += n
		if n < 1000 {
			break
		}
	}
	if total > 0 {
		s.log.Debug().Int("records", total).Msg("purged audit records past retention")
	}
	// The spend ledger goes with the audit trail, but never the current
	// month's: the monthly spend limits read it (docs/costs.md).
	before := now.Add(-s.cfg.AuditRetention)
	if month := toolrouter.PeriodStart(toolrouter.PeriodMonth, now); month.Before(before) {
		before = month
	}
	for range 100 {
		n, err := s.Store.PurgeSpend(ctx, before, 1000)
		if err != nil {
			s.log.Warn().Err(err).Msg("purge spend ledger")
			break
		}
		if n < 1000 {
			break
		}
	}
	// The longest window is an hour: a day back is long past.
	if _, err := s.Store.PurgeRates(ctx, now.Add(-24*time.Hour)); err != nil {
		s.log.Warn().Err(err).Msg("purge rate counters")
	}
}
