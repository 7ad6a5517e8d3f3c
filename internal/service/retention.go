package service

import (
	"context"
	"time"
)

// The retention sweep deletes sweepBatch rows per statement and waits
// sweepPause between statements, so a route waits for the store's write
// lock at most one short statement (docs/operations.md "Retention").
const (
	sweepBatch = 500
	sweepPause = 100 * time.Millisecond
)

// Sweep deletes the route results older than TOOLROUTER_RESULT_RETENTION
// and the finished runs older than TOOLROUTER_RUN_RETENTION, at start and
// then every tenth of the shorter retention (at most hourly), until ctx
// ends. Any number of replicas may sweep one store at once.
func (s *Service) Sweep(ctx context.Context) {
	every := min(time.Hour, min(s.cfg.ResultRetention, s.cfg.RunRetention, s.cfg.ApprovalRetention)/10)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.SweepOnce(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SweepOnce deletes what expired at now, batch by batch, and returns how
// many results and runs it deleted.
func (s *Service) SweepOnce(ctx context.Context, now time.Time) (results, runs int) {
	results = s.sweep(ctx, "route results", now.Add(-s.cfg.ResultRetention), s.Store.DeleteResultsBefore)
	runs = s.sweep(ctx, "runs", now.Add(-s.cfg.RunRetention), s.Store.DeleteRunsBefore)
	s.sweep(ctx, "tasks", now.Add(-s.cfg.ResultRetention), s.Store.DeleteTasksBefore)
	s.sweep(ctx, "approvals", now.Add(-s.cfg.ApprovalRetention), s.Store.PurgeApprovals)
	return results, runs
}

func (s *Service) sweep(ctx context.Context, what string, before time.Time, del func(context.Context, time.Time, int) (int, error)) int {
	total := 0
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		n, err := del(ctx, before, sweepBatch)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn().Err(err).Str("what", what).Msg("retention sweep")
			}
			break
		}
		if n < sweepBatch {
			break
		}
		pause.Reset(sweepPause)
		select {
		case <-ctx.Done():
			return total
		case <-pause.C:
		}
	}
	if total > 0 {
		s.log.Info().Int("deleted", total).Str("what", what).Time("before", before).Msg("retention sweep")
	}
	return total
}
