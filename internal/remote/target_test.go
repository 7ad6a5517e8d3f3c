package remote

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func TestTargetCache(t *testing.T) {
	var c targetCache
	a1, err := c.get("http://h:80/a")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := c.get("http://h:80/a")
	b, _ := c.get("http://h:/b")
	if a1 != a2 || a1 == b {
		t.Error("one endpoint must give one target, two endpoints two")
	}
	if b.tmpl.Host != "h" || b.tmpl.URL.Host != "h" {
		t.Errorf("empty port kept: %q %q", b.tmpl.Host, b.tmpl.URL.Host)
	}
	if _, err := c.get("http://[::1/x"); err == nil {
		t.Error("a malformed endpoint parsed")
	}
	if n := len(*c.m.Load()); n != 2 {
		t.Errorf("%d cached, want 2 (failures are not cached)", n)
	}

	// Concurrent lookups of many endpoints, past the bound: every target is
	// its endpoint's.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range maxTargets + 200 {
				ep := fmt.Sprintf("http://h%d/%d", i%(maxTargets+100), g)
				tg, err := c.get(ep)
				if err != nil || tg.tmpl.URL.String() != ep {
					t.Errorf("%s: %v %v", ep, tg, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(*c.m.Load()); n > maxTargets {
		t.Errorf("%d cached, want at most %d", n, maxTargets)
	}
}

func TestTargetRequest(t *testing.T) {
	var c targetCache
	tg, _ := c.get("http://u:p@h/x")
	ctx := context.WithValue(context.Background(), struct{}{}, 1)
	r := tg.request(ctx, []byte(`{"a":1}`))
	if r.Context() != ctx || r.Method != "POST" || r.ContentLength != 7 || r.URL != tg.tmpl.URL || r.Host != "h" {
		t.Errorf("request %+v", r)
	}
	if tg.tmpl.Header != nil || tg.tmpl.Body != nil {
		t.Error("the template was modified")
	}
	for range 2 {
		body, _ := r.GetBody()
		buf := make([]byte, 16)
		n, _ := body.Read(buf)
		if string(buf[:n]) != `{"a":1}` {
			t.Errorf("GetBody read %q", buf[:n])
		}
	}
	if tg.basicAuth != "Basic dTpw" {
		t.Errorf("basic auth %q", tg.basicAuth)
	}
}
