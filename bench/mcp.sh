#!/usr/bin/env bash
# MCP load benchmark: toolrouterd in front of an MCP server against calling
# that MCP server directly:
#
#   direct   bench/mcpload (Go SDK client, one session) -> bench/mcpecho tools/call echo
#   router   bench/loadgen -> toolrouterd POST /route -> (one MCP session) -> bench/mcpecho
#   stdio    bench/loadgen -> toolrouterd POST /route -> (stdin/stdout) -> bench/mcpecho -stdio,
#            a child process toolrouterd starts (a stdio MCP server)
#
# each at a fixed rate (open loop) and at full speed (closed loop), after a
# warmup. Run by `make bench-mcp` after `make build` (bin/toolrouterd).
# Everything listens on 127.0.0.1 only, everything it starts is stopped on
# exit, and the whole run takes about a minute.
#
# Knobs (environment):
#   BENCH_RATE=1000          calls/s of the fixed-rate runs
#   BENCH_RATE_WORKERS=64    workers of the fixed-rate runs
#   BENCH_DURATION=8s        measured duration of every run
#   BENCH_WARMUP=2s          unmeasured warmup before every run
#   BENCH_CONCURRENCY=32     workers of the full-speed runs
#   BENCH_BIN=bin            directory holding toolrouterd
set -euo pipefail

cd "$(dirname "$0")/.."

RATE=${BENCH_RATE:-1000}
RATE_WORKERS=${BENCH_RATE_WORKERS:-64}
DURATION=${BENCH_DURATION:-8s}
WARMUP=${BENCH_WARMUP:-2s}
CONCURRENCY=${BENCH_CONCURRENCY:-32}
BIN=${BENCH_BIN:-bin}

BENCH=bench-mcp
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_bins "$BIN/toolrouterd"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolrouterd-bench-mcp.XXXXXX")
PIDS=()
cleanup() {
	stop_pids
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port MCP_PORT
free_port ROUTER_PORT

log "building bench/loadgen, bench/mcpload, bench/mcpecho"
go build -o "$TMP/loadgen" ./bench/loadgen
go build -o "$TMP/mcpload" ./bench/mcpload
go build -o "$TMP/mcpecho" ./bench/mcpecho

"$TMP/mcpecho" -addr "127.0.0.1:$MCP_PORT" >"$TMP/mcpecho.log" 2>&1 &
PIDS+=($!)
wait_http mcpecho "http://127.0.0.1:$MCP_PORT/healthz" "${PIDS[-1]}"

cat >"$TMP/registry.yaml" <<YAML
mcp_servers:
  - name: bench
    url: http://127.0.0.1:$MCP_PORT/mcp
    tools: [echo]
    timeout: 10s
  - name: benchstdio
    command: [$TMP/mcpecho, -stdio]
    tools: [echo]
    timeout: 10s
YAML
"$BIN/toolrouterd" check "$TMP/registry.yaml" >/dev/null

env TOOLROUTER_ADDR="127.0.0.1:$ROUTER_PORT" \
	TOOLROUTER_REGISTRY="$TMP/registry.yaml" \
	TOOLROUTER_STORE=memory:// \
	TOOLROUTER_LOG_LEVEL=warn \
	TOOLROUTER_API_KEYS= \
	"$BIN/toolrouterd" >"$TMP/toolrouterd.log" 2>&1 &
PIDS+=($!)
wait_http toolrouterd "http://127.0.0.1:$ROUTER_PORT/healthz" "${PIDS[-1]}"

printf '%s' '{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"bench/echo","arguments":"{\"msg\":\"hi\"}"}}}' >"$TMP/route.json"
printf '%s' '{"plan_id":"bench-stdio","tool_call":{"id":"call_1","type":"function","function":{"name":"benchstdio/echo","arguments":"{\"msg\":\"hi\"}"}}}' >"$TMP/route-stdio.json"
post() { curl -sf --max-time 5 -X POST -H 'Content-Type: application/json' --data-binary @"$2" "$1" || true; }
# Sanity: the router reaches the MCP tool (discovery at start-up included).
ok=""
for i in $(seq 1 50); do
	if [[ $(post "http://127.0.0.1:$ROUTER_PORT/route" "$TMP/route.json") == *'"success":true'*'"msg":"hi"'* ]]; then
		ok=1
		break
	fi
	sleep 0.1
done
if [[ -z $ok ]]; then
	log "toolrouterd /route did not reach the MCP echo tool: $(post "http://127.0.0.1:$ROUTER_PORT/route" "$TMP/route.json")"
	cat "$TMP/toolrouterd.log" >&2
	exit 1
fi
[[ $(post "http://127.0.0.1:$ROUTER_PORT/route" "$TMP/route-stdio.json") == *'"success":true'*'"msg":"hi"'* ]] ||
	die "toolrouterd /route did not reach the stdio MCP echo tool: $(post "http://127.0.0.1:$ROUTER_PORT/route" "$TMP/route-stdio.json")"
"$TMP/mcpload" -url "http://127.0.0.1:$MCP_PORT/mcp" -duration 100ms -warmup 0 -concurrency 1 >/dev/null ||
	die "mcpload could not call the MCP echo tool"

TARGETS=(direct router stdio)
declare -A RES=()
CORES=$(nproc 2>/dev/null || echo '?')
log "machine: $CORES CPU cores; the load generator, toolrouterd and mcpecho all share them"
log "runs: fixed rate $RATE calls/s ($RATE_WORKERS workers) and full speed ($CONCURRENCY workers), $DURATION each after a $WARMUP warmup"

for mode in fixed full; do
	for t in "${TARGETS[@]}"; do
		if [[ $mode == fixed ]]; then
			args=(-rate "$RATE" -concurrency "$RATE_WORKERS")
		else
			args=(-rate 0 -concurrency "$CONCURRENCY")
		fi
		log "running $t, $mode ..."
		if [[ $t == direct ]]; then
			RES[$t.$mode]=$("$TMP/mcpload" -name "$t-$mode" -url "http://127.0.0.1:$MCP_PORT/mcp" \
				-tool echo -args '{"msg":"hi"}' -duration "$DURATION" -warmup "$WARMUP" "${args[@]}")
		else
			body=$TMP/route.json
			[[ $t == stdio ]] && body=$TMP/route-stdio.json
			RES[$t.$mode]=$("$TMP/loadgen" -name "$t-$mode" -url "http://127.0.0.1:$ROUTER_PORT/route" \
				-body "$body" -header 'Content-Type: application/json' \
				-duration "$DURATION" -warmup "$WARMUP" "${args[@]}")
		fi
		printf '%s\n' "${RES[$t.$mode]}"
	done
done


echo
echo "== toolrouterd MCP benchmark ($(date -u +%Y-%m-%dT%H:%M:%SZ), $CORES CPU cores) =="
echo "direct: Go SDK client -> mcpecho tools/call echo (one session)"
echo "router: POST /route (OpenAI tool call) -> toolrouterd -> one MCP session -> mcpecho"
echo "stdio:  POST /route (OpenAI tool call) -> toolrouterd -> stdin/stdout -> mcpecho -stdio (child process)"
echo "NOTE: everything shares the same $CORES cores; the router path has one more process."
for mode in fixed full; do
	echo
	if [[ $mode == fixed ]]; then
		echo "-- fixed rate: $RATE calls/s for $DURATION, open loop, latency from scheduled send time --"
	else
		echo "-- full speed: $CONCURRENCY workers for $DURATION, closed loop --"
	fi
	printf '%-8s %10s %10s %8s %8s %9s %9s %9s %9s %9s\n' target requests 'rps' errors failed p50_ms p90_ms p99_ms max_ms lag_p99
	for t in "${TARGETS[@]}"; do
		r=${RES[$t.$mode]}
		lag=-
		[[ $mode == fixed ]] && lag=$(num "$(field "$r" lag_p99_ms)")
		printf '%-8s %10s %10s %8s %8s %9s %9s %9s %9s %9s\n' "$t" \
			"$(field "$r" requests)" "$(field "$r" rps)" "$(field "$r" errors)" "$(field "$r" non2xx)" \
			"$(field "$r" p50_ms)" "$(field "$r" p90_ms)" "$(field "$r" p99_ms)" "$(field "$r" max_ms)" "$lag"
	done
	echo
	printf '%-22s %12s %10s %10s\n' "toolrouterd ratio" throughput p50 p99
	br=${RES[direct.$mode]}
	for t in router stdio; do
		rr=${RES[$t.$mode]}
		printf '%-22s %12s %10s %10s\n' "$t / direct" \
			"$(ratio "$(field "$rr" rps)" "$(field "$br" rps)")" \
			"$(ratio "$(field "$rr" p50_ms)" "$(field "$br" p50_ms)")" \
			"$(ratio "$(field "$rr" p99_ms)" "$(field "$br" p99_ms)")"
	done
done
echo
echo "throughput ratio < 1: toolrouterd serves fewer calls/s than calling the MCP server directly;"
echo "latency ratios > 1: toolrouterd answers slower. (failed: non-2xx for the router, isError for direct.)"

bad=0
for k in "${!RES[@]}"; do
	r=${RES[$k]}
	if [[ $(field "$r" errors) != 0 || $(field "$r" non2xx) != 0 ]]; then
		log "error: $k had errors or failed calls: $r"
		bad=1
	fi
done
exit $bad
