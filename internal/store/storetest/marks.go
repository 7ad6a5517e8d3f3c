package storetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/store"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// marksAreSharedAndExpire: of replicas putting one key at once, one value
// wins and every replica reads it; a mark is gone once it expires, and its
// key may then take a new value.
func marksAreSharedAndExpire(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	ss := replicas(open, 3)
	expires := clk.Now().Add(time.Minute)
	got := make([]string, 12)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := ss[i%3].PutMark(ctx, "k", fmt.Sprint("v", i), expires)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for i, v := range got {
		if v != got[0] || v == "" {
			t.Fatalf("replica %d put %q, got %q; another got %q: want one winner", i%3, fmt.Sprint("v", i), v, got[0])
		}
	}
	for i, s := range ss {
		if v, ok, err := s.GetMark(ctx, "k"); err != nil || !ok || v != got[0] {
			t.Errorf("replica %d reads %q %v %v, want %q", i, v, ok, err, got[0])
		}
	}
	if _, ok, err := ss[0].GetMark(ctx, "other"); err != nil || ok {
		t.Errorf("unknown key: %v %v", ok, err)
	}
	clk.Advance(time.Minute)
	if v, ok, err := ss[1].GetMark(ctx, "k"); err != nil || ok {
		t.Errorf("expired mark still read: %q %v %v", v, ok, err)
	}
	if v, err := ss[2].PutMark(ctx, "k", "new", clk.Now().Add(time.Hour)); err != nil || v != "new" {
		t.Errorf("put over an expired mark: %q %v, want new", v, err)
	}
	if v, ok, err := ss[0].GetMark(ctx, "k"); err != nil || !ok || v != "new" {
		t.Errorf("after the new put: %q %v %v", v, ok, err)
	}
}

// refusedRequestRecordNamesItsTools: the record of a request refused by a
// rate limit keeps its count of calls and tool names, and the tool filter
// finds it by any of them, literally (LIKE's wildcards are escaped).
func refusedRequestRecordNamesItsTools(t *testing.T, b Backend, open func() store.Store, clk *Clock) {
	ctx := context.Background()
	s := open()
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	refused := toolrouter.AuditRecord{Time: at, Client: "alice", EntryPoint: toolrouter.EntryRouteBatch,
		Outcome: toolrouter.AuditRateLimited, ErrorCategory: "rate_limited", Calls: 1024,
		Tools: toolrouter.ToolNames{"kb/search", "a_b%c", `x\y`}}
	plain := auditRecord(at.Add(time.Second), "alice", "math/add", toolrouter.AuditSuccess, 0)
	if err := s.AppendAudit(ctx, []toolrouter.AuditRecord{refused, plain}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		want int
	}{{"kb/search", 1}, {"a_b%c", 1}, {`x\y`, 1}, {"math/add", 1}, {"kb", 0}, {"a%", 0}, {"axb%c", 0}, {"%", 0}, {"_", 0}} {
		got, err := s.ListAudit(ctx, toolrouter.AuditFilter{Tool: c.tool})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != c.want {
			t.Errorf("tool=%q: %d records, want %d", c.tool, len(got), c.want)
		}
	}
	got, err := s.ListAudit(ctx, toolrouter.AuditFilter{Outcome: toolrouter.AuditRateLimited})
	if err != nil || len(got) != 1 {
		t.Fatalf("rate_limited records: %v %v", got, err)
	}
	if got[0].Calls != 1024 || !reflect.DeepEqual(got[0].Tools, refused.Tools) {
		t.Errorf("refused record read back: calls %d, tools %q", got[0].Calls, got[0].Tools)
	}
	if got, _ := s.ListAudit(ctx, toolrouter.AuditFilter{Outcome: toolrouter.AuditSuccess}); len(got) != 1 || got[0].Calls != 0 || got[0].Tools != nil {
		t.Errorf("a call's record: %+v", got)
	}
}
