package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolrouterd/toolrouterd/internal/poll"
)

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listenLine = regexp.MustCompile(`exampletools: listening on (http://\S+)\n`)

// start runs run() in the background and returns its base URL once it is listening.
func start(t *testing.T, args []string, env map[string]string) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, func(k string) string { return env[k] }, stderr) }()
	t.Cleanup(cancel)
	var url string
	poll.Until(t, 10*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("run returned %v before listening; stderr: %s", err, stderr.String())
		default:
		}
		m := listenLine.FindStringSubmatch(stderr.String())
		if m == nil {
			return fmt.Errorf("no listening line; stderr: %q", stderr.String())
		}
		url = m[1]
		return nil
	})
	return url, cancel, done
}

func TestRunServesAndShutsDown(t *testing.T) {
	base, cancel, done := start(t, []string{"-addr", "127.0.0.1:0"}, nil)

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("/healthz = %d %q", resp.StatusCode, body)
	}

	resp, err = http.Post(base+"/echo", "application/json", strings.NewReader(`{"msg":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"msg":"hi"}` {
		t.Fatalf("/echo = %q", body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after its context was cancelled")
	}
}

func TestRunFinishesInFlightCallsOnShutdown(t *testing.T) {
	base, cancel, done := start(t, []string{"-addr", "127.0.0.1:0"}, nil)
	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	// The server asks for the body ("100 Continue") when the handler reads
	// it: then the call is in flight.
	inFlight := make(chan struct{})
	go func() {
		req, _ := http.NewRequest("POST", base+"/slow", strings.NewReader(`{"ms": 300}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Expect", "100-continue")
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{Got100Continue: func() { close(inFlight) }}))
		client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
		resp, err := client.Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	var r result
	select {
	case <-inFlight:
		cancel()
		r = <-got
	case r = <-got:
		cancel()
		t.Fatalf("the call ended before the server asked for its body: %q, %v", r.body, r.err)
	}
	if r.err != nil || r.body != `{"ms": 300}` {
		t.Fatalf("in-flight /slow during shutdown = %q, %v", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestRunAddrFromEnv(t *testing.T) {
	base, cancel, done := start(t, nil, map[string]string{addrEnv: "127.0.0.1:0"})
	if !strings.HasPrefix(base, "http://127.0.0.1:") || strings.HasSuffix(base, ":9001") {
		t.Fatalf("listening on %s, want the address from %s", base, addrEnv)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunErrors(t *testing.T) {
	var stderr bytes.Buffer
	getenv := func(string) string { return "" }
	if err := run(context.Background(), []string{"-nope"}, getenv, &stderr); !errors.Is(err, errUsage) {
		t.Fatalf("unknown flag: %v", err)
	}
	if err := run(context.Background(), []string{"extra"}, getenv, &stderr); !errors.Is(err, errUsage) {
		t.Fatalf("extra argument: %v", err)
	}
	if err := run(context.Background(), []string{"-h"}, getenv, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if err := run(context.Background(), []string{"-addr", "256.0.0.1:bad"}, getenv, &stderr); err == nil || !strings.HasPrefix(err.Error(), "listen: ") {
		t.Fatalf("bad address: %v", err)
	}
}
