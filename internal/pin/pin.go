// Package pin pins the definitions of MCP servers' tools (docs/trusting-tools.md "Pinned
// definitions"): the first discovery of a tool stores its definition's
// digest in the store; a later, different definition under the same name
// quarantines the tool (the pinned definition is kept, the tool is not
// listed and its calls are refused) until an approver accepts or rejects
// the change. Every replica reads the pins from the store, so a decision
// on one is served by all.
package pin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Store keeps the pins (store.Pins).
type Store interface {
	ListPins(ctx context.Context) ([]*toolrouter.Pin, error)
	CreatePin(ctx context.Context, p *toolrouter.Pin) (bool, error)
	UpdatePin(ctx context.Context, p *toolrouter.Pin) (bool, error)
	DeletePin(ctx context.Context, p *toolrouter.Pin) (bool, error)
}

// Auditor records audit records (audit.Trail).
type Auditor interface {
	Record(ctx context.Context, recs ...toolrouter.AuditRecord)
}

// Audit outcomes of definition changes and decisions (the tool is the
// canonical name, arguments_sha256 the new definition's digest, client the
// decider).
const (
	OutcomeChanged  = "definition_changed"  // a pinned server lists another definition, or a new tool
	OutcomeFollowed = "definition_followed" // pin: false took the new definition
	OutcomeApproved = "definition_approved"
	OutcomeRejected = "definition_rejected"
	// EntryPoint is the audit entry point of these records.
	EntryPoint = "pin"
)

// Keeper reconciles the discovered MCP tools with their pins and publishes
// the tools to serve. Set its fields, then call Sync whenever the
// discovered tools change (and periodically: Watch), Decide for reviews.
type Keeper struct {
	Store Store
	Audit Auditor
	Log   zerolog.Logger
	Now   func() time.Time
	// Servers are the MCP servers of the registry in force; Discovered
	// the tools of their last discoveries (mcpclient.Manager.Tools);
	// Publish takes the tools to serve (registry.Holder.SetExtra).
	Servers    func() []toolrouter.MCPServer
	Discovered func() []*toolrouter.Tool
	Publish    func([]*toolrouter.Tool)
	// Redefine rebuilds a tool from a pinned definition
	// (mcpclient.Redefine).
	Redefine func(t *toolrouter.Tool, def json.RawMessage) (*toolrouter.Tool, error)
	// Refresh asks for a rediscovery of an MCP server's tools, without
	// waiting for it (mcpclient.Manager.Refresh); nil: none is asked.
	Refresh func(server string)
	// MaxPending bounds the pending reviews of one server, MaxPins its
	// pins (0: DefaultMaxPending, DefaultMaxPins; see prune).
	MaxPending int
	MaxPins    int

	quarantined prometheus.Gauge
	mu          sync.Mutex // serializes Sync
	synced      bool       // a Sync read the pins once
	published   string     // what was published last (see Sync), "" for nothing yet
	// listed is the digest each tool's server listed to this replica at
	// its last Sync: only a replica that saw a change may find it
	// reverted (another's server may not list the change yet).
	listed map[key]string
	// listing is listed as the running Sync finds it (only the tools
	// listed now: a server renaming its tools does not grow it).
	listing map[key]string
	// round counts the changes of each server in the running Sync.
	round map[string]*churn
	churn *prometheus.CounterVec
	// checked are the reviews (id and status) this replica rediscovered
	// its server for, having not seen their change itself.
	checked map[string]bool
}

// Register registers the gauge toolrouter_quarantined_tools and the
// counter toolrouter_pin_churn_total{server,event} on reg.
func (k *Keeper) Register(reg prometheus.Registerer) {
	k.churn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolrouter_pin_churn_total",
		Help: "Definition changes of MCP servers' tools (event changed: a review opened or a change followed), pending reviews superseded past the per-server cap (superseded) and pins deleted by retention (pruned).",
	}, []string{"server", "event"})
	if reg != nil {
		_ = reg.Register(k.churn)
	}
	k.quarantined = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "toolrouter_quarantined_tools",
		Help: "Tools of MCP servers quarantined because their definition changed (or they are new) and awaits review.",
	})
	if reg != nil {
		_ = reg.Register(k.quarantined)
	}
}

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now().UTC()
	}
	return time.Now().UTC()
}

type key struct{ server, tool string }

// Sync reconciles the discovered tools with the pins in the store
// (pinning first discoveries, opening reviews of changes, following
// changes of unpinned servers) and publishes the tools to serve. When the
// store cannot be read, the tools served stay as they were (before the
// first read: only those of unpinned servers).
func (k *Keeper) Sync(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	discovered := k.Discovered()
	servers := map[string]toolrouter.MCPServer{}
	for _, s := range k.Servers() {
		servers[s.Name] = s
	}
	pins, err := k.pins(ctx)
	if err != nil {
		if !k.synced {
			var open []*toolrouter.Tool
			for _, t := range discovered {
				if servers[t.MCPServer].Unpinned {
					open = append(open, t)
				}
			}
			k.Publish(open)
		}
		return fmt.Errorf("read the pins: %w", err)
	}
	k.synced = true
	k.listing, k.round = map[key]string{}, map[string]*churn{}
	defer func() { k.listed, k.listing, k.round = k.listing, nil, nil }()
	var served []*toolrouter.Tool
	var state strings.Builder // each discovered tool and how it is served
	quarantined := 0
	marked := map[string]bool{}
	for _, t := range discovered {
		s, ok := servers[t.MCPServer]
		if !ok {
			continue
		}
		if _, ok := pins[key{s.Name, ""}]; !ok && !marked[s.Name] {
			marked[s.Name] = true
			// The server's first discovery: its tools are pinned as they are.
			first := &toolrouter.Pin{Server: s.Name, PinnedAt: k.now()}
			if _, err := k.Store.CreatePin(ctx, first); err != nil {
				return fmt.Errorf("pin server %s: %w", s.Name, err)
			}
		}
		out, pinned, err := k.reconcile(ctx, s, t, pins, marked[s.Name])
		fmt.Fprintf(&state, "%p %s %t %s\n", t, pinned, out == nil, quarantineOf(out))
		if err != nil {
			k.Log.Warn().Err(err).Str("mcp_server", s.Name).Str("tool", t.Name).Msg("pin a tool definition")
			continue // not served: its pin is unknown
		}
		if out == nil {
			continue
		}
		if out.Quarantine != "" {
			quarantined++
		}
		served = append(served, out)
	}
	if len(k.round) > 0 {
		k.summarize(ctx)
		if err := k.prune(ctx, servers); err != nil {
			k.Log.Warn().Err(err).Msg("bound the pins of MCP servers")
		}
	}
	if k.quarantined != nil {
		k.quarantined.Set(float64(quarantined))
	}
	// The registry is rebuilt only when what is served changed (a Watch
	// round usually finds nothing new).
	if st := "v1\n" + state.String(); st != k.published {
		k.published = st
		k.Publish(served)
	}
	return nil
}

func quarantineOf(t *toolrouter.Tool) string {
	if t == nil {
		return ""
	}
	return t.Quarantine
}

func (k *Keeper) pins(ctx context.Context) (map[key]*toolrouter.Pin, error) {
	list, err := k.Store.ListPins(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[key]*toolrouter.Pin, len(list))
	for _, p := range list {
		m[key{p.Server, p.Tool}] = p
	}
	return m, nil
}

// reconcile brings the pin of discovered tool t up to date and returns
// the tool to serve: t itself, t with its pinned definition, or either
// quarantined. first says the server is discovered for the first time.
// It returns the pinned digest too.
func (k *Keeper) reconcile(ctx context.Context, s toolrouter.MCPServer, t *toolrouter.Tool, pins map[key]*toolrouter.Pin, first bool) (*toolrouter.Tool, string, error) {
	out, p, err := k.reconcilePin(ctx, s, t, pins, first)
	if err != nil || p == nil {
		return out, "", err
	}
	return out, p.Digest, nil
}

func (k *Keeper) reconcilePin(ctx context.Context, s toolrouter.MCPServer, t *toolrouter.Tool, pins map[key]*toolrouter.Pin, first bool) (*toolrouter.Tool, *toolrouter.Pin, error) {
	def, digest, err := toolrouter.CanonicalDefinition(t.Definition)
	if err != nil {
		return nil, nil, fmt.Errorf("digest the definition: %w", err)
	}
	now := k.now()
	p := pins[key{s.Name, t.MCPTool}]
	before := k.listed[key{s.Name, t.MCPTool}]
	k.listing[key{s.Name, t.MCPTool}] = digest
	switch {
	case p == nil && (first || s.Unpinned || s.PinNew == "allow"):
		p = &toolrouter.Pin{Server: s.Name, Tool: t.MCPTool, Digest: digest, Definition: def, PinnedAt: now}
		if _, err := k.Store.CreatePin(ctx, p); err != nil {
			return nil, nil, err
		}
		if !first {
			k.noteChange(ctx, s.Name, OutcomeFollowed, t.Name, digest, func() {})
		}
		return t, p, nil // served as listed (a replica that pinned it first pinned the same, or says so next Sync)
	case p == nil:
		p = &toolrouter.Pin{Server: s.Name, Tool: t.MCPTool, PinnedAt: now, Review: k.review(s, t, nil, def, digest, now)}
		created, err := k.Store.CreatePin(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		if created {
			k.noteChange(ctx, s.Name, OutcomeChanged, t.Name, digest, func() {
				k.Log.Warn().Str("mcp_server", s.Name).Str("tool", t.Name).Str("review", p.Review.ID).Msg("new tool on a pinned MCP server: quarantined until reviewed")
			})
		}
		return k.quarantine(t, p, s), p, nil
	case p.Digest == digest:
		if r := p.Review; r != nil && r.Status == toolrouter.ApprovalDenied && r.NewDigest != digest {
			// Rejected on some replica: unless this one's server still
			// lists the pinned definition, it must see the change too.
			k.check(s.Name, r)
		}
		if r := p.Review; r != nil && r.Status == toolrouter.ApprovalPending {
			if before != r.NewDigest {
				// Another replica's server lists the change, this one's the
				// pinned definition (a server of its own, not updated yet; or the
				// change not yet seen): served as pinned, and the review stays
				// open. Taking it for a revert and expiring it had the other
				// replica open it again at its next Sync, forever.
				k.check(s.Name, r)
				return t, p, nil
			}
			// The server lists the pinned definition again: the change is moot.
			r.Status, r.DecidedAt, r.Reason = toolrouter.ApprovalExpired, &now, "the server lists the pinned definition again"
			if _, err := k.Store.UpdatePin(ctx, p); err != nil {
				return nil, nil, err
			}
		}
		return t, p, nil
	case s.Unpinned:
		old := p.Digest
		p.Digest, p.Definition, p.PinnedAt, p.Review = digest, def, now, nil
		won, err := k.Store.UpdatePin(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		if won {
			k.noteChange(ctx, s.Name, OutcomeFollowed, t.Name, digest, func() {
				k.Log.Info().Str("mcp_server", s.Name).Str("tool", t.Name).Str("old_sha256", old).Str("new_sha256", digest).Msg("tool definition changed; followed (pin: false)")
			})
		}
		return t, p, nil
	}
	// A pinned tool whose server lists another definition.
	if r := p.Review; r == nil || r.NewDigest != digest || r.Status == toolrouter.ApprovalExpired || r.Status == toolrouter.ApprovalApproved {
		p.Review = k.review(s, t, p.Definition, def, digest, now)
		p.Review.OldDigest = p.Digest
		won, err := k.Store.UpdatePin(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		if won {
			k.noteChange(ctx, s.Name, OutcomeChanged, t.Name, digest, func() {
				k.Log.Warn().Str("mcp_server", s.Name).Str("tool", t.Name).Str("review", p.Review.ID).Str("old_sha256", p.Digest).
					Str("new_sha256", digest).Msg("tool definition changed: the pinned one is kept, awaiting review")
			})
		}
	}
	if p.Digest == "" {
		return k.quarantine(t, p, s), p, nil
	}
	old, err := k.Redefine(t, p.Definition)
	if err != nil {
		return nil, nil, err
	}
	if s.OnChange == "keep_old" {
		return old, p, nil
	}
	return k.quarantine(old, p, s), p, nil
}

// check asks, once per review and status, for a rediscovery of server,
// whose tool this replica serves as pinned while another replica saw it
// change (issue 32 finding 10): a server that told only that replica of
// the change (or none: a reconnection found it) is listed again here, so
// that the change is quarantined on every replica within a Watch round.
func (k *Keeper) check(server string, r *toolrouter.PinReview) {
	if k.Refresh == nil {
		return
	}
	id := r.ID + "\x00" + string(r.Status)
	if k.checked[id] {
		return
	}
	if k.checked == nil {
		k.checked = map[string]bool{}
	}
	k.checked[id] = true
	k.Log.Debug().Str("mcp_server", server).Str("review", r.ID).Str("status", string(r.Status)).
		Msg("a tool definition change seen by another replica: rediscovering the server")
	k.Refresh(server)
}

// review is a new pending review of def replacing old.
func (k *Keeper) review(s toolrouter.MCPServer, t *toolrouter.Tool, old, def json.RawMessage, digest string, now time.Time) *toolrouter.PinReview {
	return &toolrouter.PinReview{ID: ReviewID(s.Name, t.MCPTool, digest), Status: toolrouter.ApprovalPending,
		Old: old, New: def, NewDigest: digest, ChangedAt: now, ToolName: t.Name}
}

// quarantine returns a copy of t refused as p's review says; a tool whose
// review is not pending (the change was rejected, or the new tool) says so.
func (k *Keeper) quarantine(t *toolrouter.Tool, p *toolrouter.Pin, s toolrouter.MCPServer) *toolrouter.Tool {
	q := *t
	r := p.Review
	switch {
	case r == nil:
		q.Quarantine = "definition not reviewed"
	case r.Status == toolrouter.ApprovalDenied:
		q.Quarantine = fmt.Sprintf("definition changed at %s, rejected by %s (review %s)", r.ChangedAt.Format(time.RFC3339), r.DecidedBy, r.ID)
	default:
		q.Quarantine = fmt.Sprintf("definition changed at %s, awaits review (%s)", r.ChangedAt.Format(time.RFC3339), r.ID)
	}
	return &q
}

func (k *Keeper) record(ctx context.Context, outcome, tool, digest, by string) {
	if k.Audit == nil {
		return
	}
	k.Audit.Record(ctx, toolrouter.AuditRecord{Client: by, EntryPoint: EntryPoint, ToolName: tool, Tool: tool,
		ArgsSHA256: digest, Outcome: outcome})
}

// ReviewID names the review of a tool's change to the definition with
// digest: the same on every replica that sees the change.
func ReviewID(server, tool, digest string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool + "\x00" + digest))
	return "def_" + hex.EncodeToString(sum[:12])
}

// Decide applies an approver's decision to a pending review: approved,
// the new definition becomes the pin; denied, the tool stays quarantined
// (or keeps its pinned definition, on_change: keep_old). A review already
// decided is ECONFLICT, an unknown one ENOTFOUND. The tools served here
// follow at once; other replicas at their next Sync.
func (k *Keeper) Decide(ctx context.Context, id string, approve bool, by, reason string) (*toolrouter.Approval, error) {
	for range 5 {
		pins, err := k.Store.ListPins(ctx)
		if err != nil {
			return nil, toolrouter.Unavailable("store", err)
		}
		p := findReview(pins, id)
		if p == nil {
			return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
		}
		r := p.Review
		if r.Status != toolrouter.ApprovalPending {
			return nil, toolrouter.Errorf(toolrouter.ECONFLICT, "approval %s is already %s", id, r.Status)
		}
		now := k.now()
		r.DecidedAt, r.DecidedBy, r.Reason = &now, by, reason
		outcome := OutcomeRejected
		if approve {
			r.Status, outcome = toolrouter.ApprovalApproved, OutcomeApproved
			p.Digest, p.Definition, p.PinnedAt = r.NewDigest, r.New, now
		} else {
			r.Status = toolrouter.ApprovalDenied
		}
		won, err := k.Store.UpdatePin(ctx, p)
		if err != nil {
			return nil, toolrouter.Unavailable("store", err)
		}
		if !won {
			continue // another replica updated the pin meanwhile: read it again
		}
		k.Log.Info().Str("approval_id", id).Str("tool", r.ToolName).Str("decision", string(r.Status)).Str("by", by).
			Str("reason", reason).Msg("tool definition review decided")
		k.record(ctx, outcome, r.ToolName, r.NewDigest, by)
		if err := k.Sync(ctx); err != nil {
			k.Log.Warn().Err(err).Msg("serve the decided definition")
		}
		return k.approval(p), nil
	}
	return nil, toolrouter.Errorf(toolrouter.ECONFLICT, "approval %s: the pin kept changing; try again", id)
}

func findReview(pins []*toolrouter.Pin, id string) *toolrouter.Pin {
	for _, p := range pins {
		if p.Review != nil && p.Review.ID == id {
			return p
		}
	}
	return nil
}

// Review returns the review id as an approval (ENOTFOUND when unknown).
func (k *Keeper) Review(ctx context.Context, id string) (*toolrouter.Approval, error) {
	pins, err := k.Store.ListPins(ctx)
	if err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	p := findReview(pins, id)
	if p == nil {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	return k.approval(p), nil
}

// Reviews returns the reviews with the status ("" for any) as approvals,
// newest first: the pending ones, and the last decided one of each tool.
func (k *Keeper) Reviews(ctx context.Context, status toolrouter.ApprovalStatus) ([]*toolrouter.Approval, error) {
	pins, err := k.Store.ListPins(ctx)
	if err != nil {
		return nil, toolrouter.Unavailable("store", err)
	}
	var out []*toolrouter.Approval
	for _, p := range pins {
		if p.Review != nil && (status == "" || p.Review.Status == status) {
			out = append(out, k.approval(p))
		}
	}
	sortNewestFirst(out)
	return out, nil
}

// approval shows p's review as an approval of kind definition.
func (k *Keeper) approval(p *toolrouter.Pin) *toolrouter.Approval {
	r := p.Review
	onChange := "quarantine"
	for _, s := range k.Servers() {
		if s.Name == p.Server && s.OnChange == "keep_old" {
			onChange = s.OnChange
		}
	}
	a := &toolrouter.Approval{ID: r.ID, Kind: toolrouter.ApprovalKindDefinition, Status: r.Status, ToolName: r.ToolName,
		Arguments: json.RawMessage(`{}`), ArgumentsSHA256: r.NewDigest, CreatedAt: r.ChangedAt, DecidedAt: r.DecidedAt,
		Definition: &toolrouter.DefinitionChange{Server: p.Server, Tool: p.Tool, Old: r.Old, OldSHA256: r.OldDigest,
			New: r.New, NewSHA256: r.NewDigest, Diff: Diff(r.Old, r.New), OnChange: onChange,
			Invisible: Invisible(r.New)}}
	if r.Status != toolrouter.ApprovalPending {
		by, reason := r.DecidedBy, r.Reason
		a.DecidedBy, a.Reason = &by, &reason
	}
	if a.Definition.Old == nil {
		a.Definition.Old = json.RawMessage("null")
	}
	return a
}

// FileServer is the server name of the pins of the registry file's own
// tools.
const FileServer = ""

// PinFile pins the definitions of the registry file's tools (those without
// an MCP server) at every load: the file is the operator's review, so a
// changed definition replaces its pin at once, audited as
// definition_followed (once, whichever replica loads first).
func (k *Keeper) PinFile(ctx context.Context, tools []*toolrouter.Tool) error {
	pins, err := k.pins(ctx)
	if err != nil {
		return fmt.Errorf("read the pins: %w", err)
	}
	now := k.now()
	for _, t := range tools {
		if t.MCPServer != "" {
			continue
		}
		def, digest, err := toolrouter.CanonicalDefinition(map[string]any{"name": t.Name, "description": t.Description,
			"inputSchema": t.InputSchema, "outputSchema": t.OutputSchema})
		if err != nil {
			return fmt.Errorf("tool %s: digest the definition: %w", t.Name, err)
		}
		p := pins[key{FileServer, t.Name}]
		switch {
		case p == nil:
			p = &toolrouter.Pin{Server: FileServer, Tool: t.Name, Digest: digest, Definition: def, PinnedAt: now}
			if _, err := k.Store.CreatePin(ctx, p); err != nil {
				return fmt.Errorf("tool %s: %w", t.Name, err)
			}
		case p.Digest != digest:
			p.Digest, p.Definition, p.PinnedAt = digest, def, now
			won, err := k.Store.UpdatePin(ctx, p)
			if err != nil {
				return fmt.Errorf("tool %s: %w", t.Name, err)
			}
			if won {
				k.record(ctx, OutcomeFollowed, t.Name, digest, "")
			}
		}
	}
	return nil
}
