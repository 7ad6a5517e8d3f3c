package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts a headless Chromium (Debian's package, which `make test`
// installs: scripts/install-test-deps.sh) with a fresh profile, and fails
// t on any uncaught exception or error the page logs (a CSP violation, a
// failed request). It returns the tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	const exe = "/usr/bin/chromium"
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("%s: %v (make deps installs it)", exe, err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 900))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, on a context without a deadline
		t.Fatalf("start chromium: %v", err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done }) // runs first: no t.Errorf after t ends
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !strings.HasSuffix(m.URL, "/favicon.ico") {
				t.Errorf("the page logged %s (%s)", m, m.URL)
			}
		}
	}()
	return ctx
}

// in runs the steps in the tab, each within 15 s.
func in(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// void drops an action's value.
func void[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// text is the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// screenshot saves a full-page PNG in dir (and at
// TOOLROUTER_CONSOLE_SCREENSHOT when that is set: docs/console.png comes
// from there).
func screenshot(t *testing.T, ctx context.Context, name string, publish bool) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), name), png, 0o600); err != nil {
		t.Fatal(err)
	}
	if path := os.Getenv("TOOLROUTER_CONSOLE_SCREENSHOT"); publish && path != "" {
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsole drives the console at /ui in a real headless Chromium against
// the real binary: an approver signs in with their key, sees a waiting
// /route call with its tool and arguments, approves it in the page — the
// call completes and the tool ran once —, approves a paused run's call the
// same way; the run's owner then signs in and sees the run's timeline
// (model turns, tool calls, the decided approval, the answer) from the
// Runs tab's list of recent runs; the approver opens the paused run from its
// approval card; the tools
// view shows each provider's definitions.
func TestConsole(t *testing.T) {
	tool := newBodyTool(t)
	fake := startFakeLLM(t, "openai")
	rt, _ := startRouter(t, pausedRegistry(tool.srv.URL, fake))

	// The page is public (it holds no data) and locked down.
	page := do(t, "GET", rt.URL()+"/ui", nil)
	h := page.Header
	if page.Status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") ||
		h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /ui: %d %v", page.Status, h)
	}
	if r := do(t, "GET", rt.URL()+"/ui/app.js", nil); r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("GET /ui/app.js: %d %v", r.Status, r.Header)
	}
	if r := do(t, "GET", rt.URL()+"/ui/secrets.txt", nil); r.Status != 404 {
		t.Fatalf("GET /ui/secrets.txt: %d", r.Status)
	}

	held := do(t, "POST", rt.URL()+"/route", refundCall("plan-console", 12.5), asAgent...).JSON(t)
	apID, tcID := held["approval_id"].(string), held["tool_call_id"].(string)
	if held["status"] != "awaiting_approval" {
		t.Fatalf("route: %v", held)
	}

	ctx := browser(t)
	card := `article.approval[data-approval-id="` + apID + `"]`
	in(t, ctx, "sign in as the approver",
		chromedp.Navigate(rt.URL()+"/ui"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), "reviewer-key"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.CSS(card)))
	got := text(t, ctx, card)
	for _, want := range []string{"billing/refund", `"amount": 12.5`, `"to": "acct-7"`, "agent", "plan-console", "pending"} {
		if !strings.Contains(got, want) {
			t.Errorf("the approval card lacks %q:\n%s", want, got)
		}
	}
	in(t, ctx, "approve in the page",
		chromedp.SendKeys(chromedp.CSS(card+" input.reason"), "order 1234 checked"),
		chromedp.Click(chromedp.CSS(card+" button.approve")),
		chromedp.WaitVisible(chromedp.ID("notice")),
		chromedp.WaitNotPresent(chromedp.CSS(card)))
	if n := text(t, ctx, "#notice"); !strings.Contains(n, "approved billing/refund") || !strings.Contains(n, "succeeded") {
		t.Errorf("notice after approving: %q", n)
	}
	res := do(t, "GET", rt.URL()+"/results/"+tcID+"?client=agent", nil, asReviewer...).JSON(t)
	if res["success"] != true || res["status"] == "awaiting_approval" {
		t.Fatalf("result after approving in the page: %v", res)
	}
	if got := tool.received(); len(got) != 1 || !strings.Contains(got[0], `"amount":12.5`) {
		t.Fatalf("the tool received %q, want the approved call once", got)
	}
	ap := do(t, "GET", rt.URL()+"/approvals/"+apID, nil, asReviewer...).JSON(t)
	if ap["status"] != "approved" || ap["decided_by"] != "reviewer" || ap["reason"] != "order 1234 checked" {
		t.Fatalf("approval after the page decided it: %v", ap)
	}

	// A run pauses on the refund; the inbox picks it up on its refresh.
	fake.script(t,
		map[string]any{"tool_calls": []any{
			toolCall("billing/refund", map[string]any{"amount": 5, "to": "acct-7"}),
			toolCall("kb/search", map[string]any{"q": "refund policy"}),
		}},
		map[string]any{"text": "Refunded 5 to acct-7."})
	run := decodeRun(t, do(t, "POST", rt.URL()+"/runs", map[string]any{"prompt": "Refund 5 to acct-7", "context": map[string]any{"plan_id": "plan-console-run"}}, asAgent...))
	if run.Status != "awaiting_approval" {
		t.Fatalf("run: %+v", run)
	}
	// An approver reads a run with a call that waited for approval; a client
	// that is neither its owner, an approver nor an admin does not.
	if r := do(t, "GET", rt.URL()+"/runs/"+run.RunID, nil, asReviewer...); r.Status != 200 {
		t.Errorf("the approver's GET /runs/{id}: %d, want 200", r.Status)
	}
	if r := do(t, "GET", rt.URL()+"/runs/"+run.RunID, nil, asOther...); r.Status != 404 {
		t.Errorf("another client's GET /runs/{id}: %d, want 404", r.Status)
	}
	pending := do(t, "GET", rt.URL()+"/approvals?status=pending&run_id="+run.RunID, nil, asReviewer...).JSON(t)["approvals"].([]any)
	runCard := `article.approval[data-approval-id="` + pending[0].(map[string]any)["approval_id"].(string) + `"]`
	in(t, ctx, "the run's approval appears", chromedp.WaitVisible(chromedp.CSS(runCard)))
	if got := text(t, ctx, runCard); !strings.Contains(got, run.RunID) || !strings.Contains(got, `"amount": 5`) {
		t.Errorf("the run's approval card: %s", got)
	}
	screenshot(t, ctx, "approvals.png", true)
	// The approver (not an admin, not the run's client) opens the paused
	// run from the card: it sees the run whose call it decides.
	in(t, ctx, "the approver opens the run from the approval",
		chromedp.Click(chromedp.CSS(runCard+` a[href="#run/`+run.RunID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline article.run[data-run-id="`+run.RunID+`"][data-status="awaiting_approval"]`)),
		chromedp.Click(chromedp.CSS(`nav a[data-view="approvals"]`)),
		chromedp.WaitVisible(chromedp.CSS(runCard)))
	in(t, ctx, "approve the run's call", chromedp.Click(chromedp.CSS(runCard+" button.approve")), chromedp.WaitNotPresent(chromedp.CSS(runCard)))
	waitRun(t, rt, run.RunID, func(r runResult) bool { return r.Status == "completed" }, asAgent...)

	// The run's owner signs in; the Runs tab lists its recent runs (no
	// plan typed) and opens the timeline.
	in(t, ctx, "sign out, sign in as the agent, open the Runs tab",
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), "agent-key"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.Click(chromedp.CSS(`nav a[data-view="runs"]`)),
		chromedp.Click(chromedp.CSS(`table.runs a[href="#run/`+run.RunID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline li[data-step="final"]`)))
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`#timeline li[data-step]`)))
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, n := range nodes {
		steps = append(steps, n.AttributeValue("data-step"))
	}
	if want := "prompt model-turn tool tool model-turn final"; strings.Join(steps, " ") != want {
		t.Errorf("timeline steps %q, want %q", steps, want)
	}
	tl := text(t, ctx, "#timeline")
	for _, want := range []string{"Refund 5 to acct-7", "Model turn 1", "billing/refund", "kb/search", " ms", "success",
		"approved by reviewer", "Model turn 2", "completed", "Refunded 5 to acct-7."} {
		if !strings.Contains(tl, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, tl)
		}
	}
	screenshot(t, ctx, "timeline.png", false)

	// The tools view, switched to Anthropic's shape.
	in(t, ctx, "tools per provider",
		chromedp.Click(chromedp.CSS(`nav a[data-view="tools"]`)),
		chromedp.WaitVisible(chromedp.CSS(`article.tool-def[data-tool="billing/refund"]`)),
		void(chromedp.Evaluate[bool](`(s => { s.value = "anthropic"; return s.dispatchEvent(new Event("change")); })(document.getElementById("provider"))`)),
		void(chromedp.Poll[bool](`document.getElementById("tools-list").textContent.includes('"input_schema"')`)))
}

// TestConsoleApprovalsPages: the inbox reads every page of GET /approvals
// (100 a page by default), so with 151 pending approvals the oldest — past
// the first page — is shown, as text, and approved in the page.
func TestConsoleApprovalsPages(t *testing.T) {
	tool := newBodyTool(t)
	rt, _ := startRouter(t, approvalRegistry(tool.srv.URL))
	const markup = `<img src=x onerror=alert(1)>`
	oldest := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "plan-oldest", "tool_call": map[string]any{
		"name": "billing/refund", "arguments": map[string]any{"to": markup, "amount": 3}}}, asAgent...).JSON(t)
	if oldest["status"] != "awaiting_approval" {
		t.Fatalf("route: %v", oldest)
	}
	var calls []any
	for i := range 150 {
		calls = append(calls, map[string]any{"name": "billing/refund", "arguments": map[string]any{"to": fmt.Sprintf("acct-%d", i), "amount": 1}})
	}
	if r := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "plan-many", "tool_calls": calls}, asAgent...); r.Status != 200 ||
		strings.Count(string(r.Body), `"awaiting_approval"`) != 150 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	first := do(t, "GET", rt.URL()+"/approvals?status=pending", nil, asReviewer...).JSON(t)
	if n := len(first["approvals"].([]any)); n != 100 || first["next_cursor"] == nil {
		t.Fatalf("the first page holds %d approvals, next_cursor %v: want 100 and a cursor", n, first["next_cursor"])
	}

	ctx := browser(t)
	card := `article.approval[data-approval-id="` + oldest["approval_id"].(string) + `"]`
	in(t, ctx, "sign in as the approver; every page is shown",
		chromedp.Navigate(rt.URL()+"/ui"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), "reviewer-key"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.CSS(card)),
		void(chromedp.Poll[bool](`document.querySelectorAll("#ap-list article.approval").length === 151`)))
	if got := text(t, ctx, card); !strings.Contains(got, markup) || !strings.Contains(got, "plan-oldest") {
		t.Errorf("the oldest approval's card lacks its arguments as text:\n%s", got)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#ap-list img").length`)); err != nil || n != 0 {
		t.Errorf("the arguments became markup: %d img elements (%v)", n, err)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("ap-more").hidden`)); err != nil || !hidden {
		t.Errorf("the inbox says older approvals are left out, with 151 of them (%v)", err)
	}
	in(t, ctx, "approve the oldest in the page",
		chromedp.Click(chromedp.CSS(card+" button.approve")),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
		void(chromedp.Poll[bool](`document.querySelectorAll("#ap-list article.approval").length === 150`)))
	if got := tool.received(); len(got) != 1 || !strings.Contains(got[0], `"amount":3`) {
		t.Fatalf("the tool received %q, want the oldest call once", got)
	}
}

// TestConsoleApprovalsCap: at the caps of 1,000 — one client's pending
// approvals (TOOLROUTER_MAX_PENDING_APPROVALS' default) and the inbox's
// (ten pages of GET /approvals) — the 1,001st call of a client fails as
// resource; with exactly 1,000 pending the inbox shows them all and does
// not say older ones are left out; with 1,001 (another client's call) it
// shows the newest 1,000, says so, and the oldest is not among them.
func TestConsoleApprovalsCap(t *testing.T) {
	tool := newBodyTool(t)
	rt, _ := startRouter(t, approvalRegistry(tool.srv.URL))
	calls := make([]any, 1001)
	for i := range calls {
		calls[i] = map[string]any{"name": "billing/refund", "arguments": map[string]any{"to": fmt.Sprintf("acct-%d", i), "amount": 1}}
	}
	start := time.Now()
	r := do(t, "POST", rt.URL()+"/route/batch", map[string]any{"plan_id": "plan-cap", "tool_calls": calls}, asAgent...)
	t.Logf("a batch of 1,001 calls to hold answered in %v", time.Since(start))
	held, full := 0, 0
	for _, res := range r.JSON(t)["results"].([]any) {
		res := res.(map[string]any)
		switch {
		case res["status"] == "awaiting_approval":
			held++
		case res["error_category"] == "resource" && strings.Contains(fmt.Sprint(res["error"]), "TOOLROUTER_MAX_PENDING_APPROVALS is 1000"):
			full++
		}
	}
	if held != 1000 || full != 1 {
		t.Fatalf("a batch of 1,001 calls to hold: %d held, %d over the cap; want 1,000 and 1", held, full)
	}

	ctx := browser(t)
	const cards = `document.querySelectorAll("#ap-list article.approval").length`
	in(t, ctx, "sign in as the approver; the 1,000 are shown",
		chromedp.Navigate(rt.URL()+"/ui"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), "reviewer-key"),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		void(chromedp.Poll[bool](cards+` === 1000`)))
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("ap-more").hidden`)); err != nil || !hidden {
		t.Errorf("with exactly 1,000 pending, the inbox says older approvals are left out: %q (%v)", text(t, ctx, "#ap-more"), err)
	}

	// One more, from another client: the newest 1,001st.
	newest := do(t, "POST", rt.URL()+"/route", map[string]any{"plan_id": "plan-newest", "tool_call": map[string]any{
		"name": "billing/refund", "arguments": map[string]any{"to": "acct-newest", "amount": 2}}}, asOther...).JSON(t)
	if newest["status"] != "awaiting_approval" {
		t.Fatalf("route: %v", newest)
	}
	page := func(q string) ([]any, string) {
		m := do(t, "GET", rt.URL()+"/approvals?status=pending&limit=1000"+q, nil, asReviewer...).JSON(t)
		next, _ := m["next_cursor"].(string)
		return m["approvals"].([]any), next
	}
	first, next := page("")
	rest, last := page("&cursor=" + url.QueryEscape(next))
	if len(first) != 1000 || next == "" || len(rest) != 1 || last != "" {
		t.Fatalf("GET /approvals: pages of %d (next %q) and %d (next %q); want 1,000 with a cursor, then 1", len(first), next, len(rest), last)
	}
	oldest := rest[0].(map[string]any)["approval_id"].(string)
	in(t, ctx, "the next refresh shows the newest and says older ones are left out",
		chromedp.WaitVisible(chromedp.CSS(`article.approval[data-approval-id="`+newest["approval_id"].(string)+`"]`)),
		chromedp.WaitVisible(chromedp.ID("ap-more")))
	if got := text(t, ctx, "#ap-more"); !strings.Contains(got, "newest 1000 pending approvals") {
		t.Errorf("the inbox's notice: %q", got)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](cards)); err != nil || n != 1000 {
		t.Errorf("%d cards shown (%v), want the newest 1,000", n, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('article.approval[data-approval-id="`+oldest+`"]').length`)); err != nil || n != 0 {
		t.Errorf("the oldest approval %s is shown (%d, %v)", oldest, n, err)
	}
	in(t, ctx, "deciding the newest brings the oldest in, and the notice goes",
		chromedp.Click(chromedp.CSS(`article.approval[data-approval-id="`+newest["approval_id"].(string)+`"] button.deny`)),
		chromedp.WaitVisible(chromedp.CSS(`article.approval[data-approval-id="`+oldest+`"]`)),
		chromedp.WaitNotVisible(chromedp.ID("ap-more")),
		void(chromedp.Poll[bool](cards+` === 1000`)))
}
