package pin

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/approval"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Watch runs Sync every interval until ctx ends, so that decisions and
// reviews opened on other replicas apply here.
func (k *Keeper) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := k.Sync(ctx); err != nil {
				k.Log.Warn().Err(err).Msg("sync pinned tool definitions")
			}
		}
	}
}

// Guard is the executor of MCP tools that refuses the calls of
// quarantined tools (permission) before they reach their server.
type Guard struct {
	Executor
}

// Executor runs one call on a tool's backend (router.Executor).
type Executor interface {
	Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome
}

// Call implements Executor.
func (g Guard) Call(ctx context.Context, req toolrouter.ExecRequest) toolrouter.Outcome {
	if req.Tool != nil && req.Tool.Quarantine != "" {
		return toolrouter.Failure(toolrouter.CategoryPermission, "tool %s is quarantined: %s", req.Tool.Name, req.Tool.Quarantine)
	}
	return g.Executor.Call(ctx, req)
}

// Approvals is the /approvals API of the held calls with the reviews of
// definition changes joined in (kind definition): only approvers and
// admins see and decide them.
type Approvals struct {
	*approval.Keeper
	Pins *Keeper
}

func isReview(id string) bool { return strings.HasPrefix(id, "def_") }

// Approval implements httpapi.Approvals.
func (a Approvals) Approval(ctx context.Context, id string) (*toolrouter.Approval, error) {
	if !isReview(id) {
		ap, err := a.Keeper.Approval(ctx, id)
		return kindCall(ap), err
	}
	if !access.FromContext(ctx).MayApprove() {
		return nil, toolrouter.Errorf(toolrouter.ENOTFOUND, "approval %q not found", id)
	}
	return a.Pins.Review(ctx, id)
}

// ListApprovals implements httpapi.Approvals: the calls' approvals and,
// for approvers, the definition reviews, newest first.
func (a Approvals) ListApprovals(ctx context.Context, f toolrouter.ApprovalFilter) ([]*toolrouter.Approval, error) {
	as, err := a.Keeper.ListApprovals(ctx, f)
	if err != nil {
		return nil, err
	}
	for _, ap := range as {
		kindCall(ap)
	}
	if f.RunID != "" || !access.FromContext(ctx).MayApprove() {
		return as, nil
	}
	defs, err := a.Pins.Reviews(ctx, f.Status)
	if err != nil {
		return nil, err
	}
	// A page after the first joins the reviews past its cursor only.
	defs = slices.DeleteFunc(defs, func(d *toolrouter.Approval) bool { return !f.Before.Before(d.CreatedAt, d.ID) })
	as = append(append(make([]*toolrouter.Approval, 0, len(defs)+len(as)), defs...), as...) // never null in JSON
	sortNewestFirst(as)
	if f.Limit > 0 && len(as) > f.Limit {
		as = as[:f.Limit]
	}
	return as, nil
}

// Decide implements httpapi.Approvals; a definition review's decision has
// no call result.
func (a Approvals) Decide(ctx context.Context, id string, approve bool, reason string) (*toolrouter.Approval, *toolrouter.Result, error) {
	if !isReview(id) {
		ap, res, err := a.Keeper.Decide(ctx, id, approve, reason)
		return kindCall(ap), res, err
	}
	c := access.FromContext(ctx)
	if !c.MayApprove() {
		return nil, nil, toolrouter.Errorf(toolrouter.EFORBIDDEN, "client %q may not decide approvals (it needs admin: true or approver: true)", c.LabelName())
	}
	by := c.LabelName()
	if by == "" {
		by = "anonymous"
	}
	ap, err := a.Pins.Decide(ctx, id, approve, by, reason)
	return ap, nil, err
}

func kindCall(a *toolrouter.Approval) *toolrouter.Approval {
	if a != nil && a.Kind == "" {
		a.Kind = toolrouter.ApprovalKindCall
	}
	return a
}

func sortNewestFirst(as []*toolrouter.Approval) {
	slices.SortStableFunc(as, func(x, y *toolrouter.Approval) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(y.ID, x.ID)
	})
}

// maxDiffLines bounds the lines of each side a diff compares; longer
// definitions are diffed as a whole replacement.
const maxDiffLines = 500

// Diff is a line diff of two JSON documents indented: lines of both
// start with "  ", removed ones "- ", added ones "+ ". Invisible
// characters (see invisible) are shown escaped, so that a change made of
// them shows.
func Diff(old, new json.RawMessage) string {
	a, b := lines(old), lines(new)
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		return prefixed("- ", a) + prefixed("+ ", b)
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("- " + a[i] + "\n")
			i++
		default:
			sb.WriteString("+ " + b[j] + "\n")
			j++
		}
	}
	return sb.String()
}

func lines(doc json.RawMessage) []string {
	if len(doc) == 0 || string(doc) == "null" {
		return nil
	}
	found := map[rune]bool{}
	var buf bytes.Buffer
	if json.Indent(&buf, doc, "", "  ") != nil {
		return []string{escapeInvisible(string(doc), found)}
	}
	ls := strings.Split(buf.String(), "\n")
	for i, l := range ls {
		ls[i] = escapeInvisible(l, found)
	}
	return ls
}

func prefixed(p string, ls []string) string {
	var sb strings.Builder
	for _, l := range ls {
		sb.WriteString(p + l + "\n")
	}
	return sb.String()
}
