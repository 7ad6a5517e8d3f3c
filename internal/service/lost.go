package service

import (
	"sort"

	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/lograte"
	"github.com/toolrouterd/toolrouterd/internal/store"
)

// LostMetrics counts records lost by failed group commits (metrics.Metrics).
type LostMetrics interface {
	StoreLost(kind string, n int)
	StoreUp(up bool)
}

// watchLostWrites makes a store that writes behind (SQLite, PostgreSQL)
// report each failed group commit (issue 21 item 7: a full disk lost
// records without a word): an error line (rate-limited), the lost records
// counted by kind in toolrouter_store_lost_records_total, and
// toolrouter_store_up 0 at once. Readiness fails until a commit succeeds
// again (the store's Ping probes writes while they fail).
func watchLostWrites(st store.Store, m LostMetrics, log zerolog.Logger, limit *lograte.Limiter) {
	w, ok := st.(interface {
		OnLostWrites(func(err error, lost map[string]int))
	})
	if !ok {
		return
	}
	w.OnLostWrites(func(err error, lost map[string]int) {
		m.StoreUp(false)
		kinds := make([]string, 0, len(lost))
		for k := range lost {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		e := limit.Event(&log, zerolog.ErrorLevel, "store group commit failed")
		for _, k := range kinds {
			m.StoreLost(k, lost[k])
			e = e.Int(k, lost[k])
		}
		e.Err(err).Msg("store group commit failed: these records written behind are lost")
	})
}
