package sqlstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// SpendColumns are the spend ledger's columns, in SpendValues order.
const SpendColumns = "id, at_us, day, client, virtual_server, tool, model, run_id, currency, amount, unpriced, input_tokens, output_tokens, cached_tokens"

// SpendValues are e's column values in SpendColumns order.
func SpendValues(e toolrouter.SpendEntry) []any {
	unpriced := 0
	if e.Unpriced {
		unpriced = 1
	}
	at := e.At.UTC()
	return []any{e.ID, at.UnixMicro(), at.Format("2006-01-02"), e.Client, e.VirtualServer, e.Tool, e.Model, e.RunID, e.Currency,
		int64(e.Amount), unpriced, e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CachedInputTokens}
}

// SpendUpsert inserts an entry or replaces the entry of its key (at_us,
// id: migration 0130); ph writes the i-th placeholder (1-based).
func SpendUpsert(ph func(int) string) string {
	cols := strings.Split(SpendColumns, ", ")
	vals := make([]string, len(cols))
	for i := range cols {
		vals[i] = ph(i + 1)
	}
	return "INSERT INTO spend (" + SpendColumns + ") VALUES (" + strings.Join(vals, ", ") + ") " + spendOnConflict()
}

// spendOnConflict is an upsert's clause replacing the entry of the same
// key (at_us, id) with the new row's values.
func spendOnConflict() string {
	var set []string
	for _, c := range strings.Split(SpendColumns, ", ") {
		if c != "id" && c != "at_us" {
			set = append(set, c+" = excluded."+c)
		}
	}
	return "ON CONFLICT (at_us, id) DO UPDATE SET " + strings.Join(set, ", ")
}

// SpendKeyOf is the ledger key k as the group commit dedupes entries
// (writebehind.Write.Key): its id and start in microseconds.
func SpendKeyOf(k toolrouter.SpendKey) string {
	return k.ID + "\x00" + strconv.FormatInt(k.At.UnixMicro(), 10)
}

// SpendInsert inserts an entry (a reservation: its id is new).
func SpendInsert(ph func(int) string) string {
	cols := strings.Split(SpendColumns, ", ")
	vals := make([]string, len(cols))
	for i := range cols {
		vals[i] = ph(i + 1)
	}
	return "INSERT INTO spend (" + SpendColumns + ") VALUES (" + strings.Join(vals, ", ") + ")"
}

// SpentSQL is the query of what a check's counter has spent, its
// arguments after it.
func SpentSQL(c toolrouter.SpendCounter, ph func(int) string) (string, []any) {
	col := "client"
	if c.Scope == toolrouter.ScopeVirtualServer {
		// The term of spend_vserver_at's WHERE, so that the planner may
		// use that partial index (a virtual server's name is never '').
		col = "virtual_server <> '' AND virtual_server"
	}
	return "SELECT CAST(coalesce(sum(amount), 0) AS BIGINT) FROM spend WHERE " + col + " = " + ph(1) + " AND currency = " + ph(2) + " AND at_us >= " + ph(3),
		[]any{c.Name, c.Currency, c.Start.UTC().UnixMicro()}
}

// usageKey is the column GET /usage groups by.
var usageKey = map[string]string{"client": "client", "tool": "tool", "model": "model", "day": "day", "virtual_server": "virtual_server"}

// UsageSelect is the query of the groups f selects, in key then currency
// order, its arguments after it. A tool grouping leaves model turns out
// and a model grouping tool calls.
func UsageSelect(f toolrouter.UsageFilter, ph func(int) string) (string, []any, error) {
	key, ok := usageKey[f.GroupBy]
	if !ok {
		return "", nil, fmt.Errorf("usage: cannot group by %q", f.GroupBy)
	}
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", ph(len(args))))
	}
	if !f.From.IsZero() {
		add("at_us >= ?", f.From.UTC().UnixMicro())
	}
	if !f.To.IsZero() {
		add("at_us < ?", f.To.UTC().UnixMicro())
	}
	if f.Client != "" {
		add("client = ?", f.Client)
	}
	switch f.GroupBy {
	case "tool":
		where = append(where, "tool <> ''")
	case "model":
		where = append(where, "model <> ''")
	}
	if f.After != "" {
		k, cur, _ := strings.Cut(f.After, "\x1f")
		args = append(args, k, k, cur)
		where = append(where, "("+key+" > "+ph(len(args)-2)+" OR ("+key+" = "+ph(len(args)-1)+" AND currency > "+ph(len(args))+"))")
	}
	q := "SELECT " + key + ", currency, CAST(coalesce(sum(amount), 0) AS BIGINT), count(*), CAST(coalesce(sum(unpriced), 0) AS BIGINT), CAST(coalesce(sum(input_tokens), 0) AS BIGINT), CAST(coalesce(sum(output_tokens), 0) AS BIGINT), CAST(coalesce(sum(cached_tokens), 0) AS BIGINT) FROM spend"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " GROUP BY " + key + ", currency ORDER BY " + key + ", currency"
	if f.Limit > 0 {
		q += " LIMIT " + strconv.Itoa(f.Limit)
	}
	return q, args, nil
}

// UsageDest are the scan destinations of a UsageSelect row.
func UsageDest(r *toolrouter.UsageRow) []any {
	return []any{&r.Key, &r.Currency, &r.Amount, &r.Calls, &r.UnpricedCalls, &r.InputTokens, &r.OutputTokens, &r.CachedInputTokens}
}

// SpendByKeys is the query of the ledger entries of keys (the costs GET
// /audit shows), its arguments after it: one term per key, each a lookup
// of the table's key (at_us, id).
func SpendByKeys(keys []toolrouter.SpendKey, ph func(int) string) (string, []any) {
	terms := make([]string, len(keys))
	args := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		terms[i] = "(at_us = " + ph(2*i+1) + " AND id = " + ph(2*i+2) + ")"
		args = append(args, k.At.UnixMicro(), k.ID)
	}
	return "SELECT id, currency, amount, unpriced, model, input_tokens, output_tokens, cached_tokens FROM spend WHERE " + strings.Join(terms, " OR "), args
}

// CostOf is the cost of a ledger entry as SpendByIDs reads it.
func CostOf(currency string, amount int64, unpriced int64, model string, in, out, cached int64) toolrouter.Cost {
	c := toolrouter.Cost{Amount: toolrouter.Micros(amount), Currency: currency, Unpriced: unpriced != 0}
	if model != "" {
		c.Usage = &toolrouter.TokenUsage{InputTokens: in, OutputTokens: out, CachedInputTokens: cached}
	}
	return c
}
