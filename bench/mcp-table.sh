#!/usr/bin/env bash
# The MCP tools/call overhead table (issue 37; docs/benchmarks.md): an MCP
# client's tools/call of an echo tool
#
#   direct     bench/mcpload (Go SDK client, one session) -> bench/mcpecho tools/call echo
#   memory     bench/mcpload -> toolrouterd /mcp tools/call (memory://) -> one MCP session -> bench/mcpecho
#   sqlite     ... the default store, sqlite://
#   postgres   ... postgres:// (a throwaway local server, fsync on; skipped without PostgreSQL)
#
# at fixed rates (open loop: each latency from the call's scheduled time),
# every target once per round, rounds interleaved, rates one after the
# other. Each cell is the median of the rounds [min-max]; "added" is the
# median over rounds of the target's figure minus direct's in the same
# round (pairs from the same minute, which the machine's drift moves
# together). CPU per call is the server in front's utime+stime over its
# measured run (/proc/PID/stat) divided by its calls: toolrouterd's for the
# stores (PostgreSQL's own backends in a column of their own), mcpecho's for
# direct. Servers are pinned to one core, load generators to another.
#
# Knobs (environment):
#   BENCH_RATES="100 500 1000"  calls/s
#   BENCH_ROUNDS=3              interleaved rounds per rate
#   BENCH_DURATION=10s          measured duration of every run
#   BENCH_WARMUP=2s             unmeasured warmup before every run
#   BENCH_WORKERS=64            mcpload workers (enough for the rate: a worker waits for its call)
#   BENCH_ONLY=                 a regex: measure only the targets it matches
#   BENCH_SERVER_CPU=0          core of the servers
#   BENCH_LOAD_CPU=1            core of the load generators
#   BENCH_BIN=bin               directory holding toolrouterd
#   BENCH_OUT=                  also write the table (markdown) to this file
#   BENCH_ABLATE=sdk-server:sdkmcpserver  "NAME:TAG[,TAG] ...": one more row, sqlite[NAME], per
#                               entry: toolrouterd built with those tags on the default store
#                               (sdkmcpserver: every /mcp request through the go-sdk, the
#                               ablation of the server's tools/call fast path; "" for none)
set -euo pipefail

cd "$(dirname "$0")/.."

RATES=${BENCH_RATES:-100 500 1000}
ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
WORKERS=${BENCH_WORKERS:-64}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
LOAD_CPU=${BENCH_LOAD_CPU:-1}
BIN=${BENCH_BIN:-bin}
ABLATE=${BENCH_ABLATE-sdk-server:sdkmcpserver}

BENCH=bench-mcp-table
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_bins "$BIN/toolrouterd"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolrouterd-mcp-table.XXXXXX")
chmod 755 "$TMP" # PostgreSQL runs as another user
PIDS=()
PG_PID=""
cleanup() {
	stop_pids
	[[ -n $PG_PID ]] && kill -INT "$PG_PID" 2>/dev/null || true
	[[ -n $PG_PID ]] && while kill -0 "$PG_PID" 2>/dev/null; do sleep 0.1; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pin_servers

log "building bench/mcpload, bench/mcpecho"
go build -o "$TMP/mcpload" ./bench/mcpload
go build -o "$TMP/mcpecho" ./bench/mcpecho
declare -A ABL_BIN=()
build_ablations BENCH_ABLATE "$ABLATE"

free_port MCP_PORT
"${SRV[@]}" "$TMP/mcpecho" -addr "127.0.0.1:$MCP_PORT" >"$TMP/mcpecho.log" 2>&1 &
PIDS+=($!)
MCP_PID=$!
wait_http mcpecho "http://127.0.0.1:$MCP_PORT/healthz" "$MCP_PID"

start_postgres

cat >"$TMP/registry.yaml" <<EOF
mcp_servers:
  - name: bench
    url: http://127.0.0.1:$MCP_PORT/mcp
    tools: [echo]
    timeout: 10s
EOF
"$BIN/toolrouterd" check "$TMP/registry.yaml" >/dev/null

declare -A URL=() CPU_OF=()
URL[direct]="http://127.0.0.1:$MCP_PORT/mcp"
CPU_OF[direct]=$MCP_PID
# router NAME STORE [BINARY]: a toolrouterd on STORE, pinned with the servers.
router() {
	local port bin=${3:-$BIN/toolrouterd}
	free_port port
	env TOOLROUTER_ADDR="127.0.0.1:$port" \
		TOOLROUTER_REGISTRY="$TMP/registry.yaml" \
		TOOLROUTER_STORE="$2" \
		TOOLROUTER_LOG_LEVEL=warn \
		TOOLROUTER_API_KEYS= \
		"${SRV[@]}" "$bin" >"$TMP/router-$1.log" 2>&1 &
	PIDS+=($!)
	CPU_OF[$1]=$!
	URL[$1]="http://127.0.0.1:$port/mcp"
	wait_http "router-$1" "http://127.0.0.1:$port/healthz" "${CPU_OF[$1]}"
}
TARGETS=(direct memory sqlite)
router memory memory://
router sqlite "sqlite://$TMP/bench.db"
for a in $ABLATE; do
	router "sqlite[${a%%:*}]" "sqlite://$TMP/bench-${a%%:*}.db" "${ABL_BIN[${a%%:*}]}"
	TARGETS+=("sqlite[${a%%:*}]")
done
if [[ -n $PG_URL ]]; then
	router postgres "$PG_URL"
	TARGETS+=(postgres)
fi
if [[ -n ${BENCH_ONLY:-} ]]; then
	only=(direct)
	for t in "${TARGETS[@]}"; do [[ $t != direct && $t =~ $BENCH_ONLY ]] && only+=("$t"); done
	TARGETS=("${only[@]}")
fi

# load T ARGS...: mcpload against target T (the echo tool: its own name
# direct, bench_echo_<hash> through toolrouterd's /mcp).
load() {
	local t=$1
	shift
	local tool=(-tool echo)
	[[ $t != direct ]] && tool=(-tool-prefix bench_echo)
	"${LOAD[@]}" "$TMP/mcpload" -url "${URL[$t]}" "${tool[@]}" -args '{"msg":"hi"}' "$@"
}

# Sanity: every target answers (the backend's tool is discovered at start).
for t in "${TARGETS[@]}"; do
	ok=""
	for i in $(seq 1 50); do
		r=$(load "$t" -name "$t-check" -rate 0 -concurrency 1 -duration 200ms -warmup 0 2>/dev/null || true)
		[[ -n $r && $(field "$r" errors) == 0 && $(field "$r" non2xx) == 0 && $(field "$r" requests) != 0 ]] && ok=1 && break
		sleep 0.2
	done
	[[ -n $ok ]] || die "$t did not answer tools/call: $(load "$t" -name "$t-check" -rate 0 -concurrency 1 -duration 200ms -warmup 0 2>&1 || true)"
done

# run T RATE: one measured run; its JSON line with cpu_us_per_call (the
# server in front) and pg_us_per_call (PostgreSQL's backends, postgres only).
run() {
	local t=$1 rate=$2 out pids before after pg0=0 pg1=0
	load "$t" -name "$t-warmup" -rate "$rate" -concurrency "$WORKERS" -duration "$WARMUP" -warmup 0 >/dev/null
	pids=${CPU_OF[$t]}
	[[ $t == postgres ]] && pg0=$(cpu_ticks $(tree "$PG_PID"))
	before=$(cpu_ticks $pids)
	out=$(load "$t" -name "$t" -rate "$rate" -concurrency "$WORKERS" -duration "$DURATION" -warmup 0)
	after=$(cpu_ticks $pids)
	[[ $t == postgres ]] && pg1=$(cpu_ticks $(tree "$PG_PID"))
	awk -v o="$out" -v d=$((after - before)) -v p=$((pg1 - pg0)) -v tick="$TICK" -v n="$(field "$out" requests)" 'BEGIN {
		sub(/}$/, "", o); printf "%s,\"cpu_us_per_call\":%.1f,\"pg_us_per_call\":%.1f}\n", o, (n > 0 ? d / tick * 1e6 / n : 0), (n > 0 ? p / tick * 1e6 / n : 0) }'
}

cell() { read -r m lo hi <<<"$(stats "$@")"; printf '%.2f [%.2f–%.2f]' "$m" "$lo" "$hi"; }
cell1() { read -r m lo hi <<<"$(stats "$@")"; printf '%.0f [%.0f–%.0f]' "$m" "$lo" "$hi"; }
median() { read -r m _ <<<"$(stats "$@")"; printf '%+.2f' "$m"; }

log "machine: $CORES CPU cores ($(uname -m), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')); $PINNING"
log "runs: rates $RATES calls/s x ${#TARGETS[@]} targets x $ROUNDS interleaved rounds, $DURATION each after a $WARMUP warmup, $WORKERS workers"
bad=0
TABLE="| calls/s | path | p50 ms | p99 ms | p99.9 ms | added p50 / p99 / p99.9 ms | CPU µs/call |
|---|---|---|---|---|---|---|"
for rate in $RATES; do
	declare -A P50=() P99=() P999=() CPU=() PGC=()
	for round in $(seq 1 "$ROUNDS"); do
		for t in "${TARGETS[@]}"; do
			log "$rate calls/s, round $round/$ROUNDS: $t"
			r=$(run "$t" "$rate")
			printf '%s\n' "$r"
			if [[ $(field "$r" errors) != 0 || $(field "$r" non2xx) != 0 || $(field "$r" dropped) =~ ^[1-9] ]]; then
				log "error: $t had errors, isError results or dropped calls: $r"
				bad=1
			fi
			P50[$t]+="$(field "$r" p50_ms) " P99[$t]+="$(field "$r" p99_ms) " P999[$t]+="$(field "$r" p999_ms) "
			CPU[$t]+="$(field "$r" cpu_us_per_call) " PGC[$t]+="$(field "$r" pg_us_per_call) "
		done
	done
	for t in "${TARGETS[@]}"; do
		added=—
		if [[ $t != direct ]]; then
			# Per-round pairs with direct, then their median.
			read -r -a a50 <<<"${P50[$t]}"
			read -r -a a99 <<<"${P99[$t]}"
			read -r -a a999 <<<"${P999[$t]}"
			read -r -a d50 <<<"${P50[direct]}"
			read -r -a d99 <<<"${P99[direct]}"
			read -r -a d999 <<<"${P999[direct]}"
			x50=() x99=() x999=()
			for i in "${!a50[@]}"; do
				x50+=("$(awk -v a="${a50[$i]}" -v b="${d50[$i]}" 'BEGIN { print a - b }')")
				x99+=("$(awk -v a="${a99[$i]}" -v b="${d99[$i]}" 'BEGIN { print a - b }')")
				x999+=("$(awk -v a="${a999[$i]}" -v b="${d999[$i]}" 'BEGIN { print a - b }')")
			done
			added="$(median "${x50[@]}") / $(median "${x99[@]}") / $(median "${x999[@]}")"
		fi
		cpu=$(cell1 ${CPU[$t]})
		[[ $t == postgres ]] && cpu+=" + PostgreSQL $(cell1 ${PGC[$t]})"
		name="through toolrouterd, $t"
		[[ $t == direct ]] && name="direct (mcpecho's CPU)"
		TABLE+="
| $rate | $name | $(cell ${P50[$t]}) | $(cell ${P99[$t]}) | $(cell ${P999[$t]}) | $added | $cpu |"
	done
	unset P50 P99 P999 CPU PGC
done

echo
echo "== MCP tools/call overhead at fixed rates ($(date -u +%Y-%m-%dT%H:%M:%SZ)) =="
echo "machine: $CORES CPU cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//'), $(uname -sr); $PINNING"
echo "method: open loop, $ROUNDS interleaved rounds of $DURATION per rate after a $WARMUP warmup, $WORKERS workers;"
echo "median of the rounds [min–max]; added: median of per-round differences with direct"
echo
echo "$TABLE"
[[ -n ${BENCH_OUT:-} ]] && printf '%s\n' "$TABLE" >"$BENCH_OUT"
exit $bad
