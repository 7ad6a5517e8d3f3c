// Command fastproxy is bench/compare.sh's reference for a Go service off
// net/http: the same bare reverse proxy as bench/goproxy, on fasthttp's
// server and client (the stack of Go gateways such as Bifrost). It is its
// own module so that toolrouterd does not depend on fasthttp; the bench
// builds it when the module proxy is reachable and skips the row if not.
//
//	fastproxy -addr 127.0.0.1:9301 -upstream 127.0.0.1:9100
package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9301", "loopback address to listen on")
	upstream := flag.String("upstream", "", "host:port requests are forwarded to (path kept)")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || *upstream == "" {
		fmt.Fprintln(os.Stderr, "fastproxy: -addr must be a loopback host:port and -upstream is required")
		os.Exit(2)
	}
	client := &fasthttp.HostClient{Addr: *upstream, MaxConns: 1024}
	handler := func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/healthz" {
			ctx.WriteString("ok")
			return
		}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethodBytes(ctx.Method())
		req.SetRequestURI("http://" + *upstream + string(ctx.Path()))
		req.Header.SetContentTypeBytes(ctx.Request.Header.ContentType())
		req.SetBody(ctx.PostBody())
		if err := client.Do(req, resp); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
			return
		}
		ctx.SetStatusCode(resp.StatusCode())
		ctx.SetContentTypeBytes(resp.Header.ContentType())
		ctx.SetBody(resp.Body())
	}
	if err := fasthttp.ListenAndServe(*addr, handler); err != nil {
		fmt.Fprintln(os.Stderr, "fastproxy:", err)
		os.Exit(1)
	}
}
