package service

import (
	"context"
	"errors"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
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
// Store calls get no spans: they are many and small, and the SDK's samplers
// cannot tell a debug trace from another cheaply.
func countStore(st store.Store, m StoreMetrics) store.Store {
	m.StoreOps(storeOps...)
	return &countedStore{Store: st, m: m}
}

type countedStore struct {
	store.Store
	m StoreMetrics
}

func (s *countedStore) count(op string, err error) {
	var e *toolrouter.Error
	if err == nil || errors.As(err, &e) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && op != "ping" {
		return
	}
	s.m.StoreError(op)
}

func (s *countedStore) Ping(ctx context.Context) error {
	err := s.Store.Ping(ctx)
	s.count("ping", err)
	s.m.StoreUp(err == nil)
	return err
}

func (s *countedStore) NextSequence(ctx context.Context, planID string) (int64, error) {
	n, err := s.Store.NextSequence(ctx, planID)
	s.count("next_sequence", err)
	return n, err
}

func (s *countedStore) NextSequences(ctx context.Context, planID string, n int64) (int64, error) {
	first, err := s.Store.NextSequences(ctx, planID, n)
	s.count("next_sequence", err)
	return first, err
}

func (s *countedStore) SaveResult(ctx context.Context, res *toolrouter.Result, audit ...toolrouter.AuditRecord) error {
	err := s.Store.SaveResult(ctx, res, audit...)
	s.count("save_result", err)
	return err
}

func (s *countedStore) ClaimKey(ctx context.Context, key, fingerprint string, lease time.Duration) (toolrouter.Claim, error) {
	c, err := s.Store.ClaimKey(ctx, key, fingerprint, lease)
	s.count("claim_key", err)
	return c, err
}

func (s *countedStore) CompleteKey(ctx context.Context, key string, response []byte, ttl time.Duration) error {
	err := s.Store.CompleteKey(ctx, key, response, ttl)
	s.count("complete_key", err)
	return err
}

func (s *countedStore) SaveRun(ctx context.Context, run *toolrouter.Run) error {
	err := s.Store.SaveRun(ctx, run)
	s.count("save_run", err)
	return err
}

func (s *countedStore) GetRun(ctx context.Context, runID string) (*toolrouter.Run, error) {
	r, err := s.Store.GetRun(ctx, runID)
	s.count("get_run", err)
	return r, err
}

func (s *countedStore) ListRuns(ctx context.Context, planID string, limit int) ([]*toolrouter.Run, error) {
	r, err := s.Store.ListRuns(ctx, planID, limit)
	s.count("list_runs", err)
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
	n, err := p.PurgeExpiredKeys(ctx)
	s.count("purge_keys", err)
	return n, err
}
