#!/usr/bin/env bash
# Load benchmark of toolrouterd against two baselines (see bench/README.md):
#
#   direct   bench/loadgen -> exampletools POST /echo
#   nginx    bench/loadgen -> nginx (reverse proxy, keep-alive upstream) -> exampletools
#   router   bench/loadgen -> toolrouterd POST /route -> exampletools POST /echo
#   traced   the same with tracing on: every request sampled (always_on) and
#            exported over OTLP/HTTP to bench/otlpsink, which discards them
#
# each at a fixed rate (open loop) and at full speed (closed loop), after a
# warmup. Run by `make bench-load` after `make build` (bin/toolrouterd and
# bin/exampletools). Everything listens on 127.0.0.1 only, everything it
# starts is stopped on exit, and the whole run takes about 2 minutes.
#
# Knobs (environment):
#   BENCH_RATE=2000          requests/s of the fixed-rate runs
#   BENCH_RATE_WORKERS=64    loadgen workers of the fixed-rate runs
#   BENCH_DURATION=10s       measured duration of every run
#   BENCH_WARMUP=2s          unmeasured warmup before every run
#   BENCH_CONCURRENCY=32     loadgen workers of the full-speed runs
#   BENCH_NO_INSTALL=1       never install nginx (skip the nginx baseline if absent)
#   BENCH_BIN=bin            directory holding toolrouterd and exampletools
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD

RATE=${BENCH_RATE:-2000}
RATE_WORKERS=${BENCH_RATE_WORKERS:-64}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
CONCURRENCY=${BENCH_CONCURRENCY:-32}
BIN=${BENCH_BIN:-bin}

BENCH=bench-load
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_bins "$BIN/toolrouterd" "$BIN/exampletools"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolrouterd-bench.XXXXXX")
chmod 755 "$TMP" # nginx workers may run as another user
PIDS=()

cleanup() {
	stop_pids
	# nginx was started in the foreground (daemon off), so its master is in
	# PIDS; its pid file is a second line of defence.
	if [[ -s $TMP/nginx.pid ]]; then
		kill "$(cat "$TMP/nginx.pid")" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ensure_nginx

# ---------------------------------------------------------------------------
# Ports, processes.


free_port ROUTER_PORT
free_port NGINX_PORT
free_port TRACED_PORT
free_port SINK_PORT

log "building bench/loadgen"
go build -o "$TMP/loadgen" ./bench/loadgen
go build -o "$TMP/otlpsink" ./bench/otlpsink

start_exampletools

echo_registry "$TMP/registry.yaml"
"$BIN/toolrouterd" check "$TMP/registry.yaml" >/dev/null

env TOOLROUTER_ADDR="127.0.0.1:$ROUTER_PORT" \
	TOOLROUTER_REGISTRY="$TMP/registry.yaml" \
	TOOLROUTER_STORE=memory:// \
	TOOLROUTER_LOG_LEVEL=warn \
	TOOLROUTER_API_KEYS= \
	"$BIN/toolrouterd" >"$TMP/toolrouterd.log" 2>&1 &
PIDS+=($!)
wait_http toolrouterd "http://127.0.0.1:$ROUTER_PORT/healthz" "${PIDS[-1]}"

"$TMP/otlpsink" -addr "127.0.0.1:$SINK_PORT" >"$TMP/otlpsink.log" 2>&1 &
PIDS+=($!)
wait_http otlpsink "http://127.0.0.1:$SINK_PORT/" "${PIDS[-1]}"
env TOOLROUTER_ADDR="127.0.0.1:$TRACED_PORT" \
	TOOLROUTER_REGISTRY="$TMP/registry.yaml" \
	TOOLROUTER_STORE=memory:// \
	TOOLROUTER_LOG_LEVEL=warn \
	TOOLROUTER_API_KEYS= \
	OTEL_TRACES_EXPORTER=otlp \
	OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" \
	OTEL_TRACES_SAMPLER=always_on \
	"$BIN/toolrouterd" >"$TMP/traced.log" 2>&1 &
PIDS+=($!)
wait_http traced "http://127.0.0.1:$TRACED_PORT/healthz" "${PIDS[-1]}"

if [[ -n $NGINX ]]; then
	start_nginx "$NGINX_PORT" "$TOOL_PORT"
fi

# ---------------------------------------------------------------------------
# Runs.

printf '%s' '{"msg":"hi"}' >"$TMP/echo.json"
printf '%s' '{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}' >"$TMP/route.json"

# Sanity: each target answers 2xx with what we expect before we measure.
post() { curl -sf --max-time 5 -X POST -H 'Content-Type: application/json' --data-binary @"$2" "$1" || true; }
[[ $(post "http://127.0.0.1:$TOOL_PORT/echo" "$TMP/echo.json") == *'"msg":"hi"'* ]] ||
	die "exampletools /echo did not echo"
if [[ $(post "http://127.0.0.1:$ROUTER_PORT/route" "$TMP/route.json") != *'"success":true'* ]]; then
	log "toolrouterd /route did not succeed: $(post "http://127.0.0.1:$ROUTER_PORT/route" "$TMP/route.json")"
	log "its log:"
	cat "$TMP/toolrouterd.log" >&2
	exit 1
fi
if [[ -n $NGINX && $(post "http://127.0.0.1:$NGINX_PORT/echo" "$TMP/echo.json") != *'"msg":"hi"'* ]]; then
	die "nginx -> exampletools /echo did not echo"
fi

TARGETS=(direct)
[[ -n $NGINX ]] && TARGETS+=(nginx)
TARGETS+=(router traced)

declare -A URL=(
	[direct]="http://127.0.0.1:$TOOL_PORT/echo"
	[nginx]="http://127.0.0.1:$NGINX_PORT/echo"
	[router]="http://127.0.0.1:$ROUTER_PORT/route"
	[traced]="http://127.0.0.1:$TRACED_PORT/route"
)
declare -A BODY=(
	[direct]="$TMP/echo.json"
	[nginx]="$TMP/echo.json"
	[router]="$TMP/route.json"
	[traced]="$TMP/route.json"
)
declare -A RES=()

CORES=$(nproc 2>/dev/null || echo '?')
log "machine: $CORES CPU cores; loadgen, toolrouterd, exampletools and nginx all share them"
log "runs: fixed rate $RATE req/s ($RATE_WORKERS workers) and full speed ($CONCURRENCY workers), $DURATION each after a $WARMUP warmup"

for mode in fixed full; do
	for t in "${TARGETS[@]}"; do
		if [[ $mode == fixed ]]; then
			args=(-rate "$RATE" -concurrency "$RATE_WORKERS")
		else
			args=(-rate 0 -concurrency "$CONCURRENCY")
		fi
		log "running $t, $mode ..."
		RES[$t.$mode]=$("$TMP/loadgen" -name "$t-$mode" -url "${URL[$t]}" -body "${BODY[$t]}" \
			-header 'Content-Type: application/json' \
			-duration "$DURATION" -warmup "$WARMUP" "${args[@]}")
		printf '%s\n' "${RES[$t.$mode]}"
	done
done

# ---------------------------------------------------------------------------
# Report.


echo
echo "== toolrouterd load benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ), $CORES CPU cores) =="
echo "NOTE: the load generator runs on the same $CORES-core machine and competes for CPU with"
echo "      the servers; full-speed figures are a lower bound for every target, and the router's"
echo "      path (loadgen + toolrouterd + exampletools) has one more process to share CPU with."
for mode in fixed full; do
	echo
	if [[ $mode == fixed ]]; then
		echo "-- fixed rate: $RATE req/s for $DURATION, open loop, latency from scheduled send time --"
		echo "   (lag_p99: how long requests waited in the generator for a free worker; the pacer's"
		echo "    own timer overshoot, p99 $(num "$(field "${RES[direct.fixed]}" oversleep_p99_ms)") ms, is not charged)"
	else
		echo "-- full speed: $CONCURRENCY workers for $DURATION, closed loop --"
	fi
	printf '%-8s %10s %10s %8s %8s %9s %9s %9s %9s %9s\n' target requests 'rps' errors non2xx p50_ms p90_ms p99_ms max_ms lag_p99
	for t in "${TARGETS[@]}"; do
		r=${RES[$t.$mode]}
		lag=-
		[[ $mode == fixed ]] && lag=$(num "$(field "$r" lag_p99_ms)")
		printf '%-8s %10s %10s %8s %8s %9s %9s %9s %9s %9s\n' "$t" \
			"$(field "$r" requests)" "$(field "$r" rps)" "$(field "$r" errors)" "$(field "$r" non2xx)" \
			"$(field "$r" p50_ms)" "$(field "$r" p90_ms)" "$(field "$r" p99_ms)" "$(field "$r" max_ms)" "$lag"
		d=$(field "$r" dropped)
		[[ $d =~ ^[0-9]+$ ]] && log "warning: $t $mode: $d requests fell due but never completed (server far behind)"
	done
	echo
	printf '%-22s %12s %10s %10s\n' "toolrouterd ratio" throughput p50 p99
	rr=${RES[router.$mode]}
	for base in "${TARGETS[@]}"; do
		[[ $base == router || $base == traced ]] && continue
		br=${RES[$base.$mode]}
		printf '%-22s %12s %10s %10s\n' "router / $base" \
			"$(ratio "$(field "$rr" rps)" "$(field "$br" rps)")" \
			"$(ratio "$(field "$rr" p50_ms)" "$(field "$br" p50_ms)")" \
			"$(ratio "$(field "$rr" p99_ms)" "$(field "$br" p99_ms)")"
	done
	tr=${RES[traced.$mode]}
	printf '%-22s %12s %10s %10s\n' "traced / router" \
		"$(ratio "$(field "$tr" rps)" "$(field "$rr" rps)")" \
		"$(ratio "$(field "$tr" p50_ms)" "$(field "$rr" p50_ms)")" \
		"$(ratio "$(field "$tr" p99_ms)" "$(field "$rr" p99_ms)")"
done
[[ -z $NGINX ]] && echo && echo "(nginx baseline skipped: nginx was not available; see the messages above)"
echo
echo "throughput ratio < 1: toolrouterd serves fewer requests/s than the baseline;"
echo "latency ratios > 1: toolrouterd answers slower. See bench/README.md."

# Any error or non-2xx answer makes the run fail, after the report.
bad=0
for k in "${!RES[@]}"; do
	r=${RES[$k]}
	if [[ $(field "$r" errors) != 0 || $(field "$r" non2xx) != 0 ]]; then
		log "error: $k had errors or non-2xx answers: $r"
		bad=1
	fi
done
exit $bad
