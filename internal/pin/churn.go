package pin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Bounds of a server's definition churn (issue 32 finding 3,
// docs/trusting-tools.md "Definition churn").
const (
	// DefaultMaxPending is the default of Keeper.MaxPending.
	DefaultMaxPending = 100
	// DefaultMaxPins is the default of Keeper.MaxPins.
	DefaultMaxPins = 2000
	// detailedChanges is how many changes of one server one Sync logs
	// and audits one by one; the rest are one summary line and record.
	detailedChanges = 10
)

// churn is what one Sync saw of a server's changes.
type churn struct {
	changes int
	more    []string // names past detailedChanges (the first few)
	outcome string   // of the changes past detailedChanges
}

// noteChange records a change (outcome) of a server's tool in the
// running Sync: logged (log) and audited one by one up to
// detailedChanges, then summarized once by summarize.
func (k *Keeper) noteChange(ctx context.Context, server, outcome, tool, digest string, log func()) {
	c := k.round[server]
	if c == nil {
		c = &churn{}
		if k.round != nil {
			k.round[server] = c
		}
	}
	c.changes++
	k.count(server, "changed", 1)
	if c.changes <= detailedChanges {
		log()
		k.record(ctx, outcome, tool, digest, "")
		return
	}
	if c.outcome == "" || outcome == OutcomeChanged {
		c.outcome = outcome
	}
	if len(c.more) < 5 {
		c.more = append(c.more, tool)
	}
}

func (k *Keeper) count(server, event string, n int) {
	if k.churn != nil && n > 0 {
		k.churn.WithLabelValues(server, event).Add(float64(n))
	}
}

// summarize logs and audits once the changes of each server past
// detailedChanges.
func (k *Keeper) summarize(ctx context.Context) {
	for server, c := range k.round {
		more := c.changes - detailedChanges
		if more <= 0 {
			continue
		}
		k.Log.Warn().Str("mcp_server", server).Int("changes", c.changes).Int("summarized", more).Strs("some", c.more).
			Msg("many tool definitions of one MCP server changed in one discovery: the rest are summarized in one audit record")
		k.record(ctx, c.outcome, server+"/*", "", "")
	}
}

func (k *Keeper) maxPending() int {
	if k.MaxPending > 0 {
		return k.MaxPending
	}
	return DefaultMaxPending
}

func (k *Keeper) maxPins() int {
	if k.MaxPins > 0 {
		return k.MaxPins
	}
	return DefaultMaxPins
}

// prune bounds the pins of each server that changed in the running Sync:
// past MaxPending pending reviews, the oldest of tools it no longer lists
// are superseded (a new tool's pin, which holds no definition, is
// deleted; a changed tool's review expires); the pins of tools no longer
// listed that hold nothing (a new tool's expired review) are deleted, and
// past MaxPins pins the oldest of tools no longer listed, neither pending
// nor rejected, are deleted too.
func (k *Keeper) prune(ctx context.Context, servers map[string]toolrouter.MCPServer) error {
	list, err := k.Store.ListPins(ctx)
	if err != nil {
		return fmt.Errorf("read the pins: %w", err)
	}
	by := map[string][]*toolrouter.Pin{}
	for _, p := range list {
		if _, ok := k.round[p.Server]; ok && p.Tool != "" {
			by[p.Server] = append(by[p.Server], p)
		}
	}
	now := k.now()
	for server, pins := range by {
		unlisted := func(p *toolrouter.Pin) bool { _, ok := k.listing[key{server, p.Tool}]; return !ok }
		pending := slices.DeleteFunc(slices.Clone(pins), func(p *toolrouter.Pin) bool {
			return p.Review == nil || p.Review.Status != toolrouter.ApprovalPending
		})
		slices.SortFunc(pending, func(a, b *toolrouter.Pin) int { return a.Review.ChangedAt.Compare(b.Review.ChangedAt) })
		superseded, pruned := 0, 0
		gone := map[*toolrouter.Pin]bool{}
		for _, p := range pending {
			if len(pending)-superseded <= k.maxPending() {
				break
			}
			if !unlisted(p) {
				continue
			}
			var ok bool
			if p.Digest == "" {
				ok, err = k.Store.DeletePin(ctx, p)
				gone[p] = ok
			} else {
				r := p.Review
				r.Status, r.DecidedAt = toolrouter.ApprovalExpired, &now
				r.Reason = fmt.Sprintf("superseded: more than %d reviews pending on MCP server %s", k.maxPending(), server)
				ok, err = k.Store.UpdatePin(ctx, p)
			}
			if err != nil {
				return fmt.Errorf("supersede review %s: %w", p.Review.ID, err)
			}
			if ok {
				superseded++
			}
		}
		// Retention: pins of tools no longer listed that hold nothing.
		left := len(pins) - superseded
		keep := pins[:0:0]
		for _, p := range pins {
			if gone[p] {
				continue
			}
			r := p.Review
			empty := p.Digest == "" && (r == nil || r.Status == toolrouter.ApprovalExpired)
			if empty && unlisted(p) {
				ok, err := k.Store.DeletePin(ctx, p)
				if err != nil {
					return fmt.Errorf("delete the pin of %s/%s: %w", server, p.Tool, err)
				}
				if ok {
					pruned++
					left--
				}
				continue
			}
			keep = append(keep, p)
		}
		if left > k.maxPins() {
			old := slices.DeleteFunc(keep, func(p *toolrouter.Pin) bool {
				r := p.Review
				return !unlisted(p) || (r != nil && (r.Status == toolrouter.ApprovalPending || r.Status == toolrouter.ApprovalDenied))
			})
			slices.SortFunc(old, func(a, b *toolrouter.Pin) int { return pinTime(a).Compare(pinTime(b)) })
			for _, p := range old {
				if left <= k.maxPins() {
					break
				}
				ok, err := k.Store.DeletePin(ctx, p)
				if err != nil {
					return fmt.Errorf("delete the pin of %s/%s: %w", server, p.Tool, err)
				}
				if ok {
					pruned++
					left--
				}
			}
		}
		k.count(server, "superseded", superseded)
		k.count(server, "pruned", pruned)
		if superseded+pruned > 0 {
			k.Log.Info().Str("mcp_server", server).Int("superseded", superseded).Int("pruned", pruned).
				Msg("bounded the pins of an MCP server: reviews of tools it no longer lists superseded, empty pins deleted")
		}
	}
	return nil
}

// pinTime is when p last changed.
func pinTime(p *toolrouter.Pin) time.Time {
	if p.Review != nil && p.Review.ChangedAt.After(p.PinnedAt) {
		return p.Review.ChangedAt
	}
	return p.PinnedAt
}
