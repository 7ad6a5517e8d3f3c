#!/usr/bin/env bash
# Instructions per call, load-insensitive (issue 37; bench/README.md
# "/route in instructions"): each server runs under valgrind's callgrind,
# gets BENCH_CG_WARMUP requests, has its counters zeroed, serves loadgen
# for BENCH_CG_DURATION at BENCH_CG_CONCURRENCY, and is dumped; the
# instructions it executed in that window over the requests loadgen
# completed is its figure. Valgrind runs one thread at a time, so the
# figures say nothing of parallelism, only of work: they stay put on a
# loaded machine where CPU seconds do not.
#
#   go-proxy        bench/goproxy -> exampletools (the floor, as in compare.sh)
#   router-memory   toolrouterd POST /route on memory://
#   router-sqlite   ... on sqlite://
#   router-memory[NAME]  toolrouterd built with BENCH_CG_ABLATE's entry
#                   NAME:TAG[,TAG] (a decision-table ablation), on memory://
#   mcp-router      toolrouterd POST /route on sqlite:// -> one MCP session ->
#                   bench/mcpecho (compare.sh's mcp-router); its excess over
#                   router-sqlite is the MCP client's side of a call
#   mcp-router-memory  the same on memory://: without the group commits,
#                   whose calls per commit (so instructions per call) follow
#                   the throughput, the steadier figure for the MCP client
#   mcp-router[NAME]  mcp-router with the ablation build NAME
#
# Knobs: BENCH_CG_DURATION=20s, BENCH_CG_WARMUP=500 (requests),
# BENCH_CG_CONCURRENCY=4, BENCH_CG_ABLATE="" ("NAME:TAG[,TAG] ..."),
# BENCH_CG_ONLY="" (a regex: measure only the targets it matches),
# BENCH_CG_KEEP="" (a directory: keep each target's dump there as
# NAME.cg, for callgrind_annotate), BENCH_BIN=bin. Needs valgrind (apt-get install valgrind). Go's async
# preemption signals trip callgrind, so servers run with
# GODEBUG=asyncpreemptoff=1.
set -euo pipefail

cd "$(dirname "$0")/.."

DURATION=${BENCH_CG_DURATION:-20s}
WARMUP=${BENCH_CG_WARMUP:-500}
CONCURRENCY=${BENCH_CG_CONCURRENCY:-4}
ABLATE=${BENCH_CG_ABLATE:-}
ONLY=${BENCH_CG_ONLY:-}
KEEP=${BENCH_CG_KEEP:-}
BIN=${BENCH_BIN:-bin}

BENCH=bench-callgrind
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_bins "$BIN/toolrouterd" "$BIN/exampletools"
command -v valgrind >/dev/null || die "valgrind is not installed (apt-get install valgrind)"
command -v callgrind_control >/dev/null || die "callgrind_control is missing (it comes with valgrind)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolrouterd-callgrind.XXXXXX")
PIDS=()
cleanup() {
	stop_pids
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building bench/loadgen, bench/goproxy and bench/mcpecho"
go build -o "$TMP/loadgen" ./bench/loadgen
go build -o "$TMP/goproxy" ./bench/goproxy
go build -o "$TMP/mcpecho" ./bench/mcpecho
declare -A ABL_BIN=()
build_ablations BENCH_CG_ABLATE "$ABLATE"

start_exampletools

free_port MCP_PORT
"$TMP/mcpecho" -addr "127.0.0.1:$MCP_PORT" >"$TMP/mcpecho.log" 2>&1 &
PIDS+=($!)
wait_http mcpecho "http://127.0.0.1:$MCP_PORT/healthz" "${PIDS[-1]}"

echo_registry "$TMP/registry.yaml" "$MCP_PORT"
printf '%s' '{"msg":"hi"}' >"$TMP/echo.json"
printf '%s' '{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}' >"$TMP/route.json"
printf '%s' '{"plan_id":"bench-mcp","tool_call":{"id":"call_1","type":"function","function":{"name":"bench/echo","arguments":"{\"msg\":\"hi\"}"}}}' >"$TMP/mcp.json"

# measure NAME PATH BODY CMD...: starts CMD (listening on $PORT) under
# callgrind, with the variables of the array SRVENV, and prints NAME's
# instructions per call.
measure() {
	local name=$1 path=$2 body=$3 pid out reqs ir
	shift 3
	if [[ -n $ONLY && ! $name =~ $ONLY ]]; then
		return 0
	fi
	env GODEBUG=asyncpreemptoff=1 "${SRVENV[@]}" valgrind --tool=callgrind --callgrind-out-file="$TMP/$name.cg" "$@" >"$TMP/$name.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	local i
	for i in $(seq 1 600); do # valgrind starts slowly
		curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/healthz" && break
		kill -0 "$pid" 2>/dev/null || die "$name exited during start-up: $(tail -5 "$TMP/$name.log")"
		sleep 0.2
	done
	local url="http://127.0.0.1:$PORT$path" load=("$TMP/loadgen" -body "$body" -header 'Content-Type: application/json' -concurrency "$CONCURRENCY" -warmup 0)
	for i in $(seq 1 "$WARMUP"); do
		curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' --data-binary @"$body" "$url" || die "$name: warm-up request failed"
	done
	callgrind_control -z "$pid" >/dev/null 2>&1
	out=$("${load[@]}" -url "$url" -duration "$DURATION" -name "$name")
	callgrind_control -d "$pid" >/dev/null 2>&1
	for i in $(seq 1 50); do # the dump is written by the server's process
		[[ -s "$TMP/$name.cg.1" ]] && break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	reqs=$(field "$out" requests)
	[[ $(field "$out" errors) == 0 && $(field "$out" non2xx) == 0 ]] || die "$name: errors under load: $out"
	# The first dump (.1, made by callgrind_control -d) holds the window's
	# instructions; the file without a suffix is the one written at exit.
	[[ -s "$TMP/$name.cg.1" ]] || die "$name: callgrind wrote no dump"
	ir=$(grep -h '^totals:' "$TMP/$name.cg.1" | awk '{print $2}')
	[[ -z $KEEP ]] || cp "$TMP/$name.cg.1" "$KEEP/$name.cg"
	printf '%-28s %8d requests %12.0f instructions per call\n' "$name" "$reqs" "$(awk -v i="$ir" -v n="$reqs" 'BEGIN { print i / n }')"
}

SRVENV=()
free_port PORT
measure go-proxy /echo "$TMP/echo.json" "$TMP/goproxy" -addr "127.0.0.1:$PORT" -upstream "http://127.0.0.1:$TOOL_PORT"
# router NAME STORE BINARY [BODY]
router() {
	local name=$1 store=$2 bin=$3 body=${4:-$TMP/route.json}
	free_port PORT
	SRVENV=(TOOLROUTER_ADDR="127.0.0.1:$PORT" TOOLROUTER_REGISTRY="$TMP/registry.yaml" TOOLROUTER_STORE="$store"
		TOOLROUTER_LOG_LEVEL=warn TOOLROUTER_API_KEYS=)
	measure "$name" /route "$body" "$bin"
}
router router-memory memory:// "$BIN/toolrouterd"
router router-sqlite "sqlite://$TMP/bench.db" "$BIN/toolrouterd"
for a in "${!ABL_BIN[@]}"; do
	router "router-memory[$a]" memory:// "${ABL_BIN[$a]}"
done
router mcp-router "sqlite://$TMP/bench-mcp.db" "$BIN/toolrouterd" "$TMP/mcp.json"
router mcp-router-memory memory:// "$BIN/toolrouterd" "$TMP/mcp.json"
for a in "${!ABL_BIN[@]}"; do
	router "mcp-router[$a]" "sqlite://$TMP/bench-mcp-$a.db" "${ABL_BIN[$a]}" "$TMP/mcp.json"
done
