// Command mcpload is the MCP baseline of toolrouterd's MCP benchmark
// (bench/mcp.sh): it calls one tool of an MCP server directly with the
// official Go SDK's client, over one session shared by every worker (as
// toolrouterd shares one session per server), and prints one JSON line with
// the fields bench/loadgen prints:
//
//	{"name":…,"requests":…,"errors":…,"non2xx":…,"rps":…,"p50_ms":…,"p90_ms":…,"p99_ms":…,"p999_ms":…,"max_ms":…, …}
//
// errors are calls that failed (no result); non2xx are results with
// isError. The modes are loadgen's: -rate 0 is full speed (closed loop,
// -concurrency workers); -rate N is a fixed rate (open loop), each latency
// measured from the call's scheduled time. Loopback servers only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type config struct {
	name        string
	url         string
	tool        string
	toolPrefix  string
	args        map[string]any
	rate        float64
	duration    time.Duration
	warmup      time.Duration
	concurrency int
	timeout     time.Duration
}

type result struct {
	Name        string  `json:"name"`
	Mode        string  `json:"mode"`
	TargetRPS   float64 `json:"target_rps"`
	Concurrency int     `json:"concurrency"`
	DurationS   float64 `json:"duration_s"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	Non2xx      int64   `json:"non2xx"`
	RPS         float64 `json:"rps"`
	MeanMS      float64 `json:"mean_ms"`
	P50MS       float64 `json:"p50_ms"`
	P90MS       float64 `json:"p90_ms"`
	P99MS       float64 `json:"p99_ms"`
	P999MS      float64 `json:"p999_ms"`
	MaxMS       float64 `json:"max_ms"`
	LagP50MS    float64 `json:"lag_p50_ms,omitempty"`
	LagP99MS    float64 `json:"lag_p99_ms,omitempty"`
	Dropped     int64   `json:"dropped,omitempty"`
	FirstError  string  `json:"first_error,omitempty"`
}

func main() {
	var c config
	var args string
	flag.StringVar(&c.url, "url", "", "MCP endpoint (streamable HTTP), loopback only; required")
	flag.StringVar(&c.name, "name", "", "name printed in the result (default: the URL)")
	flag.StringVar(&c.tool, "tool", "echo", "tool to call")
	flag.StringVar(&c.toolPrefix, "tool-prefix", "", "call the first listed tool whose name starts with this instead of -tool (toolrouterd's /mcp names a backend's tool bench_echo_<hash>)")
	flag.StringVar(&args, "args", `{"msg":"hi"}`, "the tool's arguments, a JSON object")
	flag.Float64Var(&c.rate, "rate", 0, "calls per second, open loop; 0 = full speed, closed loop")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "measured duration")
	flag.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured warmup before the measured run (same mode)")
	flag.IntVar(&c.concurrency, "concurrency", 32, "workers")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Second, "per-call timeout")
	flag.Parse()
	if err := check(&c, args); err != nil {
		fmt.Fprintln(os.Stderr, "mcpload:", err)
		os.Exit(2)
	}
	res, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpload:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
}

func check(c *config, args string) error {
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-url %q: want http://HOST:PORT/PATH", c.url)
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-url %q: only loopback servers are allowed", c.url)
	}
	if err := json.Unmarshal([]byte(args), &c.args); err != nil {
		return fmt.Errorf("-args: %v", err)
	}
	switch {
	case c.rate < 0 || c.rate > 1_000_000:
		return errors.New("-rate must be in [0, 1000000]")
	case c.duration <= 0 || c.duration > 5*time.Minute:
		return errors.New("-duration must be in (0, 5m]")
	case c.warmup < 0 || c.warmup > time.Minute:
		return errors.New("-warmup must be in [0, 1m]")
	case c.concurrency < 1 || c.concurrency > 4096:
		return errors.New("-concurrency must be in [1, 4096]")
	}
	if c.name == "" {
		c.name = c.url
	}
	return nil
}

type stats struct {
	lat, lag              []time.Duration
	requests, errs, isErr int64
	dropped               int64
	firstErr              string
}

func (s *stats) merge(o *stats) {
	s.lat = append(s.lat, o.lat...)
	s.lag = append(s.lag, o.lag...)
	s.requests += o.requests
	s.errs += o.errs
	s.isErr += o.isErr
	s.dropped += o.dropped
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
}

type runner struct {
	cfg config
	cs  *mcp.ClientSession
}

func (r *runner) call(ctx context.Context, s *stats, from time.Time, record bool) {
	lag := time.Since(from)
	cctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	res, err := r.cs.CallTool(cctx, &mcp.CallToolParams{Name: r.cfg.tool, Arguments: r.cfg.args})
	cancel()
	d := time.Since(from)
	if !record {
		return
	}
	if err != nil && ctx.Err() != nil {
		s.dropped++
		return
	}
	s.requests++
	switch {
	case err != nil:
		s.errs++
		if s.firstErr == "" {
			s.firstErr = err.Error()
		}
	case res.IsError:
		s.isErr++
		if s.firstErr == "" {
			s.firstErr = "isError result"
		}
	}
	s.lat = append(s.lat, d)
	if r.cfg.rate > 0 {
		s.lag = append(s.lag, lag)
	}
}

// phase runs the configured mode for d and returns the merged stats and
// the elapsed time.
func (r *runner) phase(d time.Duration, record bool) (*stats, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d+r.cfg.timeout+time.Second)
	defer cancel()
	n := r.cfg.concurrency
	per := make([]*stats, n)
	for i := range per {
		per[i] = &stats{}
	}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	if r.cfg.rate == 0 {
		for i := range n {
			wg.Go(func() {
				for time.Now().Before(end) {
					r.call(ctx, per[i], time.Now(), record)
				}
			})
		}
	} else {
		due := make(chan time.Time, n)
		for i := range n {
			wg.Go(func() {
				for t := range due {
					r.call(ctx, per[i], t, record)
				}
			})
		}
		total := int64(d.Seconds() * r.cfg.rate)
	pace:
		for i := range total {
			// Each call is timed from its schedule, whatever delayed it
			// (a busy worker, the pacer's own oversleep).
			t := start.Add(time.Duration(float64(i) * float64(time.Second) / r.cfg.rate))
			if wait := time.Until(t); wait > 0 {
				time.Sleep(wait)
			}
			select {
			case due <- t:
			case <-ctx.Done():
				break pace
			}
		}
		close(due)
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := &stats{}
	for _, s := range per {
		all.merge(s)
	}
	return all, elapsed
}

// findTool is the name of the first tool the server lists whose name
// starts with prefix.
func findTool(ctx context.Context, cs *mcp.ClientSession, prefix string) (string, error) {
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return "", fmt.Errorf("tools/list: %w", err)
		}
		if strings.HasPrefix(t.Name, prefix) {
			return t.Name, nil
		}
	}
	return "", fmt.Errorf("no tool named %s*", prefix)
}

func run(c config) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        c.concurrency * 2,
		MaxIdleConnsPerHost: c.concurrency * 2,
		IdleConnTimeout:     90 * time.Second,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		return result{}, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if c.toolPrefix != "" {
		if c.tool, err = findTool(ctx, cs, c.toolPrefix); err != nil {
			return result{}, err
		}
	}
	r := &runner{cfg: c, cs: cs}
	if c.warmup > 0 {
		r.phase(c.warmup, false)
	}
	s, elapsed := r.phase(c.duration, true)
	res := result{
		Name: c.name, Mode: "full-speed", TargetRPS: c.rate, Concurrency: c.concurrency,
		DurationS: elapsed.Seconds(), Requests: s.requests, Errors: s.errs, Non2xx: s.isErr,
		Dropped: s.dropped, FirstError: s.firstErr,
	}
	if c.rate > 0 {
		res.Mode = "fixed-rate"
	}
	if elapsed > 0 {
		res.RPS = round(float64(s.requests) / elapsed.Seconds())
	}
	if len(s.lat) > 0 {
		slices.Sort(s.lat)
		var sum time.Duration
		for _, d := range s.lat {
			sum += d
		}
		res.MeanMS = ms(sum / time.Duration(len(s.lat)))
		res.P50MS, res.P90MS, res.P99MS = ms(quantile(s.lat, 0.5)), ms(quantile(s.lat, 0.9)), ms(quantile(s.lat, 0.99))
		res.P999MS = ms(quantile(s.lat, 0.999))
		res.MaxMS = ms(s.lat[len(s.lat)-1])
	}
	if len(s.lag) > 0 {
		slices.Sort(s.lag)
		res.LagP50MS, res.LagP99MS = ms(quantile(s.lag, 0.5)), ms(quantile(s.lag, 0.99))
	}
	return res, nil
}

// quantile of sorted samples (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
