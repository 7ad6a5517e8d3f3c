package service

import (
	"context"
	"errors"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/telemetry"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// StoreMetrics counts store failures and readiness (metrics.Metrics).
type StoreMetrics interface {
	StoreOps(ops ...string)
	StoreError(op string)
	StoreUp(up bool)
}

// storeOps are the operations countedStore counts failures of.
var storeOps = []string{"ping", "next_sequence", "save_result", "claim_key", "complete_key", "save_run", "get_run", "list_runs", "purge_keys"}

// countStore wraps st so that its failures count in
// toolrouter_store_errors_total{operation} and its Ping (the readiness
// check) sets toolrouter_store_up. Application answers (not found, a reused
// key) and cancellations are not failures.
//
// These calls are also spans "store {operation}" when spans is not nil
// (TOOLROUTER_TRACE_STORE=true, telemetry.Telemetry.Store): they are many
// and small, so only when debugging.
func countStore(st store.Store, m StoreMetrics, spans telemetry.StoreSpans) store.Store {
	m.StoreOps(storeOps...)
	return &countedStore{Store: st, m: m, spans: spans}
}

type countedStore struct {
	store.Store
	m     StoreMetrics
	spans telemetry.StoreSpans // nil: no spans
}

// start opens the span of a call to op, if store calls are traced.
func (s *countedStore) start(ctx context.Context, op string) (context.Context, func(error)) {
	if s.spans == nil {
		return ctx, nil
	}
	return s.spans(ctx, op)
}

// done ends the call to op that start began: its span, and its count when
// it failed.
func (s *countedStore) done(op string, end func(error), err error) {
	var e *toolrouter.Error
	if err == nil || errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && op != "ping" {
		err = nil
	} else {
		s.m.StoreError(op)
	}
	if end != nil {
		end(err)
	}
}

func (s *countedStore) Ping(ctx context.Context) error {
	ctx, end := s.start(ctx, "ping")
	err := s.Store.Ping(ctx)
	s.done("ping", end, err)
	s.m.StoreUp(err == nil)
	return err
}

func (s *countedStore) NextSequence(ctx context.Context, planID string) (int64, error) {
	ctx, end := s.start(ctx, "next_sequence")
	n, err := s.Store.NextSequence(ctx, planID)
	s.done("next_sequence", end, err)
	return n, err
}

func (s *countedStore) NextSequences(ctx context.Context, planID string, n int64) (int64, error) {
	ctx, end := s.start(ctx, "next_sequence")
	first, err := s.Store.NextSequences(ctx, planID, n)
	s.done("next_sequence", end, err)
	return first, err
}

func (s *countedStore) SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error {
	ctx, end := s.start(ctx, "save_result")
	err := s.Store.SaveResult(ctx, res, audit...)
	s.done("save_result", end, err)
	return err
}

func (s *countedStore) ClaimKey(ctx context.Context, key, fingerprint string, lease time.Duration) (toolrouter.Claim, error) {
	ctx, end := s.start(ctx, "claim_key")
	c, err := s.Store.ClaimKey(ctx, key, fingerprint, lease)
	s.done("claim_key", end, err)
	return c, err
}

func (s *countedStore) CompleteKey(ctx context.Context, key string, response []byte, ttl time.Duration) error {
	ctx, end := s.start(ctx, "complete_key")
	err := s.Store.CompleteKey(ctx, key, response, ttl)
	s.done("complete_key", end, err)
	return err
}

func (s *countedStore) SaveRun(ctx context.Context, run *toolrouter.Run) error {
	ctx, end := s.start(ctx, "save_run")
	err := s.Store.SaveRun(ctx, run)
	s.done("save_run", end, err)
	return err
}

func (s *countedStore) GetRun(ctx context.Context, runID string) (*toolrouter.Run, error) {
	ctx, end := s.start(ctx, "get_run")
	r, err := s.Store.GetRun(ctx, runID)
	s.done("get_run", end, err)
	return r, err
}

func (s *countedStore) ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	ctx, end := s.start(ctx, "list_runs")
	r, err := s.Store.ListRuns(ctx, planID, limit)
	s.done("list_runs", end, err)
	return r, err
}

// PurgeExpiredKeys forwards to the wrapped store when it purges keys.
func (s *countedStore) PurgeExpiredKeys(ctx context.Context) (int, error) {
	p, ok := s.Store.(interface {
		PurgeExpiredKeys(ctx context.Context) (int, error)
	})
	if !ok {
		return 0, nil
	}
	ctx, end := s.start(ctx, "purge_keys")
	n, err := p.PurgeExpiredKeys(ctx)
	s.done("purge_keys", end, err)
	return n, err
}
