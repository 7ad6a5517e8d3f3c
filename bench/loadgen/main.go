// Command loadgen is a small HTTP load generator for toolrouterd's
// benchmarks (bench/load.sh). It uses the standard library only and talks to
// loopback addresses only.
//
// Two modes:
//
//   - -rate 0 (full speed, closed loop): -concurrency workers each send a
//     request, wait for the reply, and send the next one. Throughput is the
//     figure of interest; latency includes the queueing the workers cause.
//
//   - -rate N (fixed rate, open loop): a pacer schedules N requests per second
//     on a fixed timetable and -concurrency workers send them. Latency is
//     measured from each request's scheduled send time, not from the moment a
//     worker got round to it, so a server that stalls is charged for the
//     requests that queued behind the stall (no coordinated omission). That
//     holds for every delay: a worker that is busy (the server is behind),
//     the Go scheduler, and the pacer's own timer overshoot alike.
//
// It prints one JSON line:
//
//	{"name":…,"requests":…,"errors":…,"non2xx":…,"rps":…,"p50_ms":…,"p90_ms":…,"p99_ms":…,"p999_ms":…,"max_ms":…, …}
//
// requests counts every completed attempt (errors included); errors are
// transport failures (no HTTP reply); non2xx are replies with another status.
// Percentiles cover every completed attempt.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Hard bounds, whatever the flags say.
const (
	maxDuration    = 5 * time.Minute
	maxWarmup      = 1 * time.Minute
	maxConcurrency = 4096
	maxRate        = 1_000_000
	maxBodyBytes   = 16 << 20
	// maxSamples bounds the latency samples kept (8 bytes each); beyond it
	// the run is stopped early and reported as such.
	maxSamples = 20_000_000
)

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

type config struct {
	name        string
	url         *url.URL
	method      string
	body        []byte
	header      http.Header
	rate        float64
	duration    time.Duration
	warmup      time.Duration
	concurrency int
	timeout     time.Duration
	// extra are more targets (-also-url): requests go round-robin over url
	// and these, e.g. several replicas.
	extra []*url.URL
	// plans > 0 renders "{{plan}}" in the body as plan-0 … plan-(plans-1),
	// round-robin, so requests spread over that many plans.
	plans int
}

// result is the JSON line printed at the end.
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
	// LagP50MS and LagP99MS (fixed rate only) are how late requests left
	// the load generator after their scheduled time: the wait for a free
	// worker (the server being behind) plus the generator's own delays.
	// Lag is included in the latencies; a lag close to the latencies means
	// queueing or the generator, not the server's service time, dominates
	// them. OversleepP99MS is the pacer's timer overshoot (part of the lag).
	LagP50MS       float64 `json:"lag_p50_ms,omitempty"`
	LagP99MS       float64 `json:"lag_p99_ms,omitempty"`
	OversleepP99MS float64 `json:"oversleep_p99_ms,omitempty"`
	// Dropped counts fixed-rate requests that were due but never completed
	// because the run's hard deadline came first (a server far behind).
	Dropped    int64  `json:"dropped,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	FirstError string `json:"first_error,omitempty"`
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	var (
		c       config
		rawURL  = fs.String("url", "", "target URL (loopback only), required")
		body    = fs.String("body", "", "file holding the request body (POST); empty means GET with no body")
		method  = fs.String("method", "", "HTTP method (default POST with -body, GET without)")
		headers headerFlags
	)
	fs.StringVar(&c.name, "name", "", "name printed in the result (default: the URL)")
	fs.Var(&headers, "header", `request header "Name: value" (repeatable)`)
	fs.Float64Var(&c.rate, "rate", 0, "requests per second, open loop; 0 = full speed, closed loop")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured duration")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured warmup before the measured run (same mode)")
	fs.IntVar(&c.concurrency, "concurrency", 32, "workers (and connections)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "per-request timeout")
	var also headerFlags
	fs.Var(&also, "also-url", "another target (repeatable); requests go round-robin over -url and these")
	fs.IntVar(&c.plans, "plans", 0, `render "{{plan}}" in the body as plan-0 … plan-(N-1), round-robin`)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *rawURL == "" {
		return c, errors.New("-url is required")
	}
	u, err := url.Parse(*rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("-url %q: want http://HOST:PORT/PATH", *rawURL)
	}
	if !loopback(u.Hostname()) {
		return c, fmt.Errorf("-url %q: only loopback targets are allowed (127.0.0.0/8, ::1, localhost)", *rawURL)
	}
	c.url = u
	for _, a := range also {
		v, err := url.Parse(a)
		if err != nil || v.Host == "" || !loopback(v.Hostname()) {
			return c, fmt.Errorf("-also-url %q: want a loopback http://HOST:PORT/PATH", a)
		}
		c.extra = append(c.extra, v)
	}
	if c.plans < 0 || c.plans > 100_000 {
		return c, errors.New("-plans must be in [0, 100000]")
	}
	if *body != "" {
		f, err := os.Open(*body)
		if err != nil {
			return c, fmt.Errorf("-body: %w", err)
		}
		c.body, err = io.ReadAll(io.LimitReader(f, maxBodyBytes+1))
		f.Close()
		if err != nil {
			return c, fmt.Errorf("-body: %w", err)
		}
		if len(c.body) > maxBodyBytes {
			return c, fmt.Errorf("-body: larger than %d bytes", maxBodyBytes)
		}
	}
	c.method = *method
	if c.method == "" {
		c.method = http.MethodGet
		if *body != "" {
			c.method = http.MethodPost
		}
	}
	c.header = http.Header{}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return c, fmt.Errorf("-header %q: want \"Name: value\"", h)
		}
		c.header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if c.body != nil && c.header.Get("Content-Type") == "" {
		c.header.Set("Content-Type", "application/json")
	}
	switch {
	case c.rate < 0 || c.rate > maxRate:
		return c, fmt.Errorf("-rate must be in [0, %d]", maxRate)
	case c.duration <= 0 || c.duration > maxDuration:
		return c, fmt.Errorf("-duration must be in (0, %s]", maxDuration)
	case c.warmup < 0 || c.warmup > maxWarmup:
		return c, fmt.Errorf("-warmup must be in [0, %s]", maxWarmup)
	case c.concurrency < 1 || c.concurrency > maxConcurrency:
		return c, fmt.Errorf("-concurrency must be in [1, %d]", maxConcurrency)
	case c.timeout <= 0 || c.timeout > time.Minute:
		return c, errors.New("-timeout must be in (0, 1m]")
	}
	if c.name == "" {
		c.name = u.String()
	}
	return c, nil
}

// loopback reports whether host names this machine's loopback interface.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newClient returns a client whose transport keeps one idle connection per
// worker, so that every worker reuses its keep-alive connection.
func newClient(c config) *http.Client {
	dialer := &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil, // loopback: never through a proxy
		DialContext:           dialer.DialContext,
		MaxIdleConns:          c.concurrency,
		MaxIdleConnsPerHost:   c.concurrency,
		MaxConnsPerHost:       0,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: c.timeout,
		ExpectContinueTimeout: 0,
		ForceAttemptHTTP2:     false,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   c.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// stats is one worker's tally; merged at the end, so workers never contend.
type stats struct {
	lat      []time.Duration
	lag      []time.Duration // fixed rate: actual - intended send time
	requests int64
	errors   int64
	non2xx   int64
	dropped  int64
	firstErr string
	// oversleepP99 is the pacer's p99 timer overshoot (not charged).
	oversleepP99 time.Duration
}

func (s *stats) merge(o *stats) {
	s.lat = append(s.lat, o.lat...)
	s.lag = append(s.lag, o.lag...)
	s.requests += o.requests
	s.errors += o.errors
	s.non2xx += o.non2xx
	s.dropped += o.dropped
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
}

// runner sends requests and records their outcome.
type runner struct {
	cfg     config
	targets []string
	bodies  [][]byte // one per plan with -plans, else just the body
	next    atomic.Uint64
	target  string
	client  *http.Client
	samples atomic.Int64 // samples kept so far, against maxSamples
	full    atomic.Bool
}

// do sends one request and records it in s when record is set; latency runs
// from `from` (the intended send time in fixed-rate mode).
func (r *runner) do(ctx context.Context, s *stats, from time.Time, record bool) {
	lag := time.Since(from)
	n := r.next.Add(1)
	var rd io.Reader
	if r.cfg.body != nil {
		rd = bytes.NewReader(r.bodies[n%uint64(len(r.bodies))])
	}
	req, err := http.NewRequestWithContext(ctx, r.cfg.method, r.targets[n%uint64(len(r.targets))], rd)
	if err != nil {
		panic(err) // the URL was validated
	}
	for k, v := range r.cfg.header {
		req.Header[k] = v
	}
	resp, err := r.client.Do(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	d := time.Since(from)
	if !record {
		return
	}
	if err != nil && ctx.Err() != nil {
		// Cut short by the run's hard deadline, not a failure of the server.
		s.dropped++
		return
	}
	s.requests++
	switch {
	case err != nil:
		s.errors++
		if s.firstErr == "" {
			s.firstErr = err.Error()
		}
	case status < 200 || status > 299:
		s.non2xx++
		if s.firstErr == "" {
			s.firstErr = fmt.Sprintf("HTTP %d", status)
		}
	}
	if r.samples.Add(1) > maxSamples {
		r.full.Store(true)
		return
	}
	s.lat = append(s.lat, d)
	if r.cfg.rate > 0 {
		s.lag = append(s.lag, lag)
	}
}

// phase runs the configured mode for d; it records when record is set.
// It returns the merged stats and the elapsed time.
func (r *runner) phase(d time.Duration, record bool) (*stats, time.Duration) {
	// The whole phase, drain included, is bounded: d plus one request
	// timeout plus a second of grace.
	ctx, cancel := context.WithTimeout(context.Background(), d+r.cfg.timeout+time.Second)
	defer cancel()
	n := r.cfg.concurrency
	per := make([]*stats, n)
	for i := range per {
		per[i] = &stats{}
		if record {
			est := int(d.Seconds()*max(r.cfg.rate, 1000)) / n
			per[i].lat = make([]time.Duration, 0, min(est+16, 1<<20))
		}
	}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	var unsent int64
	var oversleepP99 time.Duration
	if r.cfg.rate == 0 {
		for i := range n {
			wg.Go(func() {
				for time.Now().Before(end) && !r.full.Load() {
					r.do(ctx, per[i], time.Now(), record)
				}
			})
		}
	} else {
		// The pacer hands out intended send times on a fixed timetable.
		// When every worker is busy it blocks, and the requests it then
		// releases late still carry their intended times: the wait counts
		// in their latency.
		due := make(chan time.Time, n)
		var oversleep []time.Duration
		if record {
			oversleep = make([]time.Duration, 0, 1024)
		}
		for i := range n {
			wg.Go(func() {
				for t := range due {
					r.do(ctx, per[i], t, record)
				}
			})
		}
		total := int64(d.Seconds() * r.cfg.rate)
		sent := int64(0)
	pace:
		for i := int64(0); i < total && !r.full.Load(); i++ {
			t := start.Add(time.Duration(float64(i) * float64(time.Second) / r.cfg.rate))
			if wait := time.Until(t); wait > 0 {
				// Sleep may overshoot: the requests that fell due meanwhile
				// go out back to back, each still timed from its schedule.
				time.Sleep(wait)
				if record && len(oversleep) < cap(oversleep) {
					oversleep = append(oversleep, time.Since(t))
				}
			}
			select {
			case due <- t:
				sent++
			case <-ctx.Done():
				break pace
			}
		}
		close(due)
		unsent = total - sent
		if len(oversleep) > 0 {
			slices.Sort(oversleep)
			oversleepP99 = quantile(oversleep, 0.99)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := &stats{}
	if record {
		all.dropped = unsent
		all.oversleepP99 = oversleepP99
	}
	for _, s := range per {
		all.merge(s)
	}
	return all, elapsed
}

func run(cfg config) (*result, error) {
	r := &runner{cfg: cfg, target: cfg.url.String(), client: newClient(cfg)}
	r.targets = []string{r.target}
	for _, u := range cfg.extra {
		r.targets = append(r.targets, u.String())
	}
	r.bodies = [][]byte{cfg.body}
	if cfg.plans > 0 {
		r.bodies = make([][]byte, cfg.plans)
		for i := range r.bodies {
			r.bodies[i] = bytes.ReplaceAll(cfg.body, []byte("{{plan}}"), []byte(fmt.Sprintf("plan-%d", i)))
		}
	}
	defer r.client.CloseIdleConnections()

	if cfg.warmup > 0 {
		r.phase(cfg.warmup, false)
	}
	s, elapsed := r.phase(cfg.duration, true)

	res := &result{
		Name:        cfg.name,
		Mode:        "full-speed",
		TargetRPS:   cfg.rate,
		Concurrency: cfg.concurrency,
		DurationS:   round(elapsed.Seconds(), 3),
		Requests:    s.requests,
		Errors:      s.errors,
		Non2xx:      s.non2xx,
		Dropped:     s.dropped,
		Truncated:   r.full.Load(),
		FirstError:  s.firstErr,
	}
	if cfg.rate > 0 {
		res.Mode = "fixed-rate"
	}
	if elapsed > 0 {
		res.RPS = round(float64(s.requests)/elapsed.Seconds(), 1)
	}
	if len(s.lat) > 0 {
		slices.Sort(s.lat)
		var sum time.Duration
		for _, d := range s.lat {
			sum += d
		}
		res.MeanMS = ms(sum / time.Duration(len(s.lat)))
		res.P50MS = ms(quantile(s.lat, 0.50))
		res.P90MS = ms(quantile(s.lat, 0.90))
		res.P99MS = ms(quantile(s.lat, 0.99))
		res.P999MS = ms(quantile(s.lat, 0.999))
		res.MaxMS = ms(s.lat[len(s.lat)-1])
	}
	if len(s.lag) > 0 {
		slices.Sort(s.lag)
		res.LagP50MS = ms(quantile(s.lag, 0.50))
		res.LagP99MS = ms(quantile(s.lag, 0.99))
		res.OversleepP99MS = ms(s.oversleepP99)
	}
	return res, nil
}

// quantile is the nearest-rank q-quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return round(float64(d)/1e6, 3) }

func round(v float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}
