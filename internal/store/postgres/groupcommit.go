package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/toolrouterd/toolrouterd/internal/store/sqlstore"
	"github.com/toolrouterd/toolrouterd/internal/store/writebehind"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// The group commit (docs/operations.md "Storage and durability"): the results and
// audit records queued since the last commit are inserted by one
// statement each, whatever their number (rows passed as arrays, unnest
// making them a table), and the other writes (an Idempotency-Key's answer)
// follow one statement each, all in one batch: one round trip, one
// transaction, one WAL flush. A statement per row cost PostgreSQL, which
// the pinned bench runs on the same core as toolrouterd, an executor
// start, a Bind and an Execute per row.

// saveResultsSQL upserts the results of a commit; tool call ids are
// distinct (ON CONFLICT DO UPDATE may touch a row once per statement), a
// NULL created_at is the server's now().
const saveResultsSQL = `INSERT INTO route_results (tool_call_id, plan_id, body, created_at)
	SELECT id, plan, body::json, COALESCE(at, now())
	FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS v(id, plan, body, at)
	ON CONFLICT (tool_call_id) DO UPDATE SET plan_id = excluded.plan_id, body = excluded.body`

// insertAuditsSQL inserts the audit records of a commit in queue order
// (their ids, which order the trail, follow it).
const insertAuditsSQL = `INSERT INTO audit (at, client, entry_point, plan_id, sequence, tool_call_id,
		tool_name, tool, args_sha256, outcome, error_category, duration_ms, replica, guardrails, calls, tools, credential, parent_tool_call_id)
	SELECT at, client, entry_point, plan_id, sequence, tool_call_id,
		tool_name, tool, args_sha256, outcome, error_category, duration_ms, replica, guardrails, calls, tools, credential, parent_tool_call_id
	FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::float8[], $13::text[], $14::text[],
		$15::integer[], $16::text[], $17::text[], $18::text[])
		WITH ORDINALITY AS v(at, client, entry_point, plan_id, sequence, tool_call_id,
		tool_name, tool, args_sha256, outcome, error_category, duration_ms, replica, guardrails, calls, tools, credential, parent_tool_call_id, ord)
	ORDER BY ord`

// settleSpendsSQL upserts the settled spend ledger entries of a commit
// (each carried by its call's audit record, docs/costs.md "The ledger");
// keys (at_us, id) are distinct (a key's last entry, as upserts in order
// would leave it), since ON CONFLICT DO UPDATE may touch a row once per
// statement.
const settleSpendsSQL = `INSERT INTO spend (` + sqlstore.SpendColumns + `)
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[])
	ON CONFLICT (at_us, id) DO UPDATE SET day = excluded.day, client = excluded.client,
		virtual_server = excluded.virtual_server, tool = excluded.tool, model = excluded.model, run_id = excluded.run_id,
		currency = excluded.currency, amount = excluded.amount, unpriced = excluded.unpriced,
		input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, cached_tokens = excluded.cached_tokens`

// resultRow is a result queued for the group commit: the one Arg of a
// Write whose SQL is saveResultsSQL.
type resultRow struct {
	key, plan, body string
	at              *time.Time // nil: the server's now()
}

// auditRow is an audit record queued for the group commit: the one Arg of
// a Write whose SQL is insertAuditsSQL. Its Sequence was copied into seq
// when it was queued (a queued write must not see later changes).
type auditRow struct {
	r   toolrouter.AuditRecord
	seq pgtype.Int8
}

func resultWrite(r resultRow) writebehind.Write {
	return writebehind.Write{SQL: saveResultsSQL, Args: []any{r}, Kind: "result"}
}

// auditWrites are the writes that insert recs, and upsert the spend
// ledger entry a record carries (its call's settled cost) in the same
// transaction.
func auditWrites(recs []toolrouter.AuditRecord) []writebehind.Write {
	return appendAuditWrites(make([]writebehind.Write, 0, len(recs)), recs)
}

// appendAuditWrites appends the writes of recs (auditWrites) to ws.
func appendAuditWrites(ws []writebehind.Write, recs []toolrouter.AuditRecord) []writebehind.Write {
	for i := range recs {
		a := auditRow{r: recs[i]}
		if s := a.r.Sequence; s != nil {
			a.seq = pgtype.Int8{Int64: *s, Valid: true}
		}
		a.r.Sequence, a.r.Spend = nil, nil
		ws = append(ws, writebehind.Write{SQL: insertAuditsSQL, Args: []any{a}, Kind: "audit"})
		if e := recs[i].Spend; e != nil {
			ws = append(ws, writebehind.Write{SQL: settleSpendsSQL, Args: []any{*e}, Kind: "spend"})
		}
	}
	return ws
}

// commit is the group commit: ws in one transaction, one round trip. A
// batch sent without BEGIN and COMMIT is one implicit transaction (one
// Sync ends the pipeline: PostgreSQL commits it whole or, at the first
// error, none of it), which spares the two round trips of an explicit one.
func (p *Store) commit(ctx context.Context, ws []writebehind.Write) error {
	ctx, cancel := context.WithTimeout(ctx, pgCommitTimeout)
	defer cancel()
	var results results
	var audits audits
	var spends spends
	b := &pgx.Batch{}
	var others []writebehind.Write
	nr, na, ns := 0, 0, 0
	for _, w := range ws {
		switch w.SQL {
		case saveResultsSQL:
			nr++
		case insertAuditsSQL:
			na++
		case settleSpendsSQL:
			ns++
		}
	}
	results.grow(nr)
	audits.grow(na)
	spends.grow(ns)
	for _, w := range ws {
		switch w.SQL {
		case saveResultsSQL:
			results.add(w.Args[0].(resultRow))
		case insertAuditsSQL:
			audits.add(w.Args[0].(auditRow))
		case settleSpendsSQL:
			spends.add(w.Args[0].(toolrouter.SpendEntry))
		default:
			others = append(others, w)
		}
	}
	// The rows first: the other writes (updates of idempotency keys
	// claimed before this group) read none of them.
	if len(results.ids) > 0 {
		b.Queue(saveResultsSQL, results.ids, results.plans, results.bodies, results.ats)
	}
	if len(audits.at) > 0 {
		a := &audits
		b.Queue(insertAuditsSQL, a.at, a.client, a.entryPoint, a.planID, a.seq, a.toolCallID,
			a.toolName, a.tool, a.argsSHA256, a.outcome, a.errorCategory, a.durationMS, a.replica, a.guardrails, a.calls, a.tools, a.credential, a.parent)
	}
	if len(spends.id) > 0 {
		c := &spends
		b.Queue(settleSpendsSQL, c.id, c.atUS, c.day, c.client, c.virtualServer, c.tool, c.model,
			c.runID, c.currency, c.amount, c.unpriced, c.input, c.output, c.cached)
	}
	for _, w := range others {
		b.Queue(w.SQL, w.Args...)
	}
	if err := p.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres group commit: %w", err)
	}
	return nil
}

// results are the columns of the results of one commit.
type results struct {
	ids, plans, bodies []string
	ats                []*time.Time
	index              map[string]int // id to its row, once there are two
}

func (c *results) grow(n int) {
	c.ids, c.plans, c.bodies, c.ats = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]*time.Time, 0, n)
}

// add appends r, or replaces the row of the same id queued before it (as
// the second of two upserts would).
func (c *results) add(r resultRow) {
	if len(c.ids) == 1 && c.index == nil {
		c.index = map[string]int{c.ids[0]: 0}
	}
	if i, ok := c.index[r.key]; ok {
		c.plans[i], c.bodies[i], c.ats[i] = r.plan, r.body, r.at
		return
	}
	if c.index != nil {
		c.index[r.key] = len(c.ids)
	}
	c.ids, c.plans, c.bodies, c.ats = append(c.ids, r.key), append(c.plans, r.plan), append(c.bodies, r.body), append(c.ats, r.at)
}

// audits are the columns of the audit records of one commit.
type audits struct {
	at                                                             []time.Time
	client, entryPoint, planID, toolCallID, toolName, tool         []string
	argsSHA256, outcome, errorCategory, replica, guardrails, tools []string
	credential, parent                                             []string
	seq                                                            []pgtype.Int8
	durationMS                                                     []float64
	calls                                                          []int32
}

func (c *audits) grow(n int) {
	c.at = make([]time.Time, 0, n)
	for _, col := range []*[]string{&c.client, &c.entryPoint, &c.planID, &c.toolCallID, &c.toolName, &c.tool,
		&c.argsSHA256, &c.outcome, &c.errorCategory, &c.replica, &c.guardrails, &c.tools, &c.credential, &c.parent} {
		*col = make([]string, 0, n)
	}
	c.seq = make([]pgtype.Int8, 0, n)
	c.durationMS = make([]float64, 0, n)
	c.calls = make([]int32, 0, n)
}

func (c *audits) add(a auditRow) {
	r := &a.r
	c.at = append(c.at, r.Time)
	c.client = append(c.client, r.Client)
	c.entryPoint = append(c.entryPoint, r.EntryPoint)
	c.planID = append(c.planID, r.PlanID)
	c.seq = append(c.seq, a.seq)
	c.toolCallID = append(c.toolCallID, r.ToolCallID)
	c.toolName = append(c.toolName, r.ToolName)
	c.tool = append(c.tool, r.Tool)
	c.argsSHA256 = append(c.argsSHA256, r.ArgsSHA256)
	c.outcome = append(c.outcome, r.Outcome)
	c.errorCategory = append(c.errorCategory, r.ErrorCategory)
	c.durationMS = append(c.durationMS, r.DurationMS)
	c.replica = append(c.replica, r.Replica)
	c.guardrails = append(c.guardrails, sqlstore.AuditGuardrails(r))
	c.calls = append(c.calls, int32(r.Calls))
	tools, _ := r.Tools.Value()
	c.tools = append(c.tools, tools.(string))
	c.credential = append(c.credential, sqlstore.AuditCredential(r))
	c.parent = append(c.parent, r.ParentCallID)
}

// spends are the columns of the settled spend entries of one commit, in
// sqlstore.SpendColumns order.
type spends struct {
	id, day, client, virtualServer, tool, model, runID, currency []string
	atUS, amount, unpriced, input, output, cached                []int64
	index                                                        map[toolrouter.SpendKey]int // key to its row
}

func (c *spends) grow(n int) {
	if n == 0 {
		return
	}
	for _, col := range []*[]string{&c.id, &c.day, &c.client, &c.virtualServer, &c.tool, &c.model, &c.runID, &c.currency} {
		*col = make([]string, 0, n)
	}
	for _, col := range []*[]int64{&c.atUS, &c.amount, &c.unpriced, &c.input, &c.output, &c.cached} {
		*col = make([]int64, 0, n)
	}
	c.index = make(map[toolrouter.SpendKey]int, n)
}

// add appends e, or replaces the row of the same key (id and start, to
// the microsecond) queued before it (as the second of two upserts would).
// Its columns are SpendValues'.
func (c *spends) add(e toolrouter.SpendEntry) {
	at := e.At.UTC()
	unpriced := int64(0)
	if e.Unpriced {
		unpriced = 1
	}
	k := toolrouter.SpendKey{ID: e.ID, At: time.UnixMicro(at.UnixMicro())}
	if i, ok := c.index[k]; ok {
		c.day[i], c.client[i], c.virtualServer[i] = at.Format("2006-01-02"), e.Client, e.VirtualServer
		c.tool[i], c.model[i], c.runID[i], c.currency[i] = e.Tool, e.Model, e.RunID, e.Currency
		c.amount[i], c.unpriced[i] = int64(e.Amount), unpriced
		c.input[i], c.output[i], c.cached[i] = e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CachedInputTokens
		return
	}
	c.index[k] = len(c.id)
	c.id, c.atUS, c.day = append(c.id, e.ID), append(c.atUS, at.UnixMicro()), append(c.day, at.Format("2006-01-02"))
	c.client, c.virtualServer = append(c.client, e.Client), append(c.virtualServer, e.VirtualServer)
	c.tool, c.model, c.runID, c.currency = append(c.tool, e.Tool), append(c.model, e.Model), append(c.runID, e.RunID), append(c.currency, e.Currency)
	c.amount, c.unpriced = append(c.amount, int64(e.Amount)), append(c.unpriced, unpriced)
	c.input, c.output = append(c.input, e.Usage.InputTokens), append(c.output, e.Usage.OutputTokens)
	c.cached = append(c.cached, e.Usage.CachedInputTokens)
}
