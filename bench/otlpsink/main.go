// Command otlpsink accepts OTLP/HTTP trace exports and discards them: the
// collector of the traced toolrouterd in bench/load.sh, so that the
// figure measures toolrouterd's side of tracing (spans, batching,
// encoding, sending), not a collector's.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "listen address")
	flag.Parse()
	srv := &http.Server{Addr: *addr, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		// An empty ExportTraceServiceResponse: zero bytes of protobuf.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	log.Fatal(srv.ListenAndServe())
}
