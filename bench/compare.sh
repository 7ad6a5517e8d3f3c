#!/usr/bin/env bash
# Side-by-side benchmark (issue 10; see bench/README.md): the same echo tool
# reached
#
#   direct           loadgen -> exampletools POST /echo
#   nginx            loadgen -> nginx (keep-alive reverse proxy) -> exampletools
#   go-proxy         loadgen -> bench/goproxy (bare Go reverse proxy: net/http server,
#                    toolrouterd's outbound transport, nothing else) -> exampletools:
#                    the floor of any Go service on net/http that makes one call
#   fast-proxy       loadgen -> bench/fastproxy (the same on fasthttp, its own module;
#                    skipped when it cannot be built) -> exampletools
#   router-memory    loadgen -> toolrouterd POST /route (memory://) -> exampletools
#   router-sqlite    ... the default store, sqlite://
#   router-postgres  ... postgres:// (a throwaway local server; skipped without PostgreSQL)
#   mcp-direct       mcpload (Go SDK, one session) -> mcpecho tools/call echo
#   mcp-router       loadgen -> toolrouterd POST /route (default store) -> one MCP session -> mcpecho
#   router-sqlite[NAME]  ablation: router-sqlite built with the extra build
#                    tags of BENCH_ABLATE's entry NAME (bench/README.md, decision table)
#   mcp-router[NAME] the same build's MCP path (BENCH_ABLATE defaults to
#                    "sdk-mcp:sdkmcp": the kept MCP fast path against the SDK's)
#
# first at full speed (closed loop), then at a fixed rate (open loop, each
# latency from the request's scheduled time: BENCH_ROUTE_RATE for the HTTP
# targets, BENCH_MCP_RATE for the MCP ones), in interleaved rounds (every
# target once per round), each figure the median of the rounds with its
# spread (min-max).
# Servers (toolrouterd, nginx, the tools, PostgreSQL) are pinned to one core
# and the load generators to another (taskset), so that they do not compete;
# each server's CPU per routed call comes from /proc/PID/stat (utime+stime)
# before and after its measured run. Then a soak: BENCH_SOAK at a fixed rate
# on toolrouterd with the default store, printing its RSS and goroutines at
# start and end (they should stay flat).
#
# Knobs (environment):
#   BENCH_ROUNDS=3          interleaved rounds
#   BENCH_DURATION=5s       measured duration of every run
#   BENCH_WARMUP=1s         unmeasured warmup before every run
#   BENCH_CONCURRENCY=32    loadgen workers
#   BENCH_ROUTE_RATE=1000   fixed rate of the HTTP targets, req/s (0 skips the fixed-rate part)
#   BENCH_MCP_RATE=500      fixed rate of the MCP targets, calls/s
#   BENCH_RATE_DURATION=10s measured duration of every fixed-rate run
#   BENCH_ABLATE=sdk-mcp:sdkmcp "NAME:TAG[,TAG] ...": one more router-sqlite[NAME] and mcp-router[NAME] per
#                           entry, toolrouterd built with those build tags
#   BENCH_ONLY=             a regex: measure only the targets it matches (e.g.
#                           '^router-sqlite' for the ablations alone)
#   BENCH_SOAK=60s          soak duration (0 skips it)
#   BENCH_SOAK_RATE=500     soak requests/s
#   BENCH_SERVER_CPU=0      core of the servers
#   BENCH_LOAD_CPU=1        core of the load generators
#   BENCH_NO_INSTALL=1      never install nginx
#   BENCH_BIN=bin           directory holding toolrouterd and exampletools
set -euo pipefail

cd "$(dirname "$0")/.."

ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-5s}
WARMUP=${BENCH_WARMUP:-1s}
CONCURRENCY=${BENCH_CONCURRENCY:-32}
SOAK=${BENCH_SOAK:-60s}
SOAK_RATE=${BENCH_SOAK_RATE:-500}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
LOAD_CPU=${BENCH_LOAD_CPU:-1}
BIN=${BENCH_BIN:-bin}
ROUTE_RATE=${BENCH_ROUTE_RATE:-1000}
MCP_RATE=${BENCH_MCP_RATE:-500}
RATE_DURATION=${BENCH_RATE_DURATION:-10s}
ABLATE=${BENCH_ABLATE-sdk-mcp:sdkmcp}

BENCH=bench-compare
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_bins "$BIN/toolrouterd" "$BIN/exampletools"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/toolrouterd-compare.XXXXXX")
chmod 755 "$TMP" # nginx workers and PostgreSQL may run as another user
PIDS=()
PG_PID=""
cleanup() {
	stop_pids
	[[ -s $TMP/nginx.pid ]] && kill "$(cat "$TMP/nginx.pid")" 2>/dev/null || true
	[[ -n $PG_PID ]] && kill -INT "$PG_PID" 2>/dev/null || true
	[[ -n $PG_PID ]] && while kill -0 "$PG_PID" 2>/dev/null; do sleep 0.1; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pin_servers

ensure_nginx

log "building bench/loadgen, bench/goproxy, bench/fastproxy, bench/mcpload, bench/mcpecho"
go build -o "$TMP/loadgen" ./bench/loadgen
go build -o "$TMP/goproxy" ./bench/goproxy
FASTPROXY=""
if (cd bench/fastproxy && go build -o "$TMP/fastproxy" .) >"$TMP/fastproxy-build.log" 2>&1; then
	FASTPROXY=$TMP/fastproxy
else
	log "SKIPPING fast-proxy: bench/fastproxy did not build (module proxy unreachable?):"
	cat "$TMP/fastproxy-build.log" >&2
fi
go build -o "$TMP/mcpload" ./bench/mcpload
go build -o "$TMP/mcpecho" ./bench/mcpecho
declare -A ABL_BIN=()
build_ablations BENCH_ABLATE "$ABLATE"

free_port TOOL_PORT
free_port NGINX_PORT
free_port MCP_PORT
free_port GOPROXY_PORT
free_port FASTPROXY_PORT
# serve NAME PORT CMD...: starts CMD (listening on PORT) pinned with the
# servers, logging to $TMP/NAME.log, and waits for its /healthz; SERVED is
# its pid.
serve() {
	local name=$1 port=$2
	shift 2
	"${SRV[@]}" "$@" >"$TMP/$name.log" 2>&1 &
	PIDS+=($!)
	SERVED=$!
	wait_http "$name" "http://127.0.0.1:$port/healthz" "$SERVED"
}
serve exampletools "$TOOL_PORT" "$BIN/exampletools" -addr "127.0.0.1:$TOOL_PORT"
TOOL_PID=$SERVED
serve mcpecho "$MCP_PORT" "$TMP/mcpecho" -addr "127.0.0.1:$MCP_PORT"
MCP_PID=$SERVED
serve goproxy "$GOPROXY_PORT" "$TMP/goproxy" -addr "127.0.0.1:$GOPROXY_PORT" -upstream "http://127.0.0.1:$TOOL_PORT"
GOPROXY_PID=$SERVED
FASTPROXY_PID=""
if [[ -n $FASTPROXY ]]; then
	serve fastproxy "$FASTPROXY_PORT" "$FASTPROXY" -addr "127.0.0.1:$FASTPROXY_PORT" -upstream "127.0.0.1:$TOOL_PORT"
	FASTPROXY_PID=$SERVED
fi
NGINX_PID=""
if [[ -n $NGINX ]]; then
	start_nginx "$NGINX_PORT" "$TOOL_PORT" "${SRV[@]}"
	[[ -n $NGINX ]] && NGINX_PID=${PIDS[-1]}
fi

start_postgres

echo_registry "$TMP/registry.yaml" "$MCP_PORT"
"$BIN/toolrouterd" check "$TMP/registry.yaml" >/dev/null

declare -A PORT=() PID=()
# router NAME STORE [BINARY]: a toolrouterd on STORE, pinned with the servers.
router() {
	free_port PORT_NEXT
	PORT[$1]=$PORT_NEXT
	env TOOLROUTER_ADDR="127.0.0.1:${PORT[$1]}" \
		TOOLROUTER_REGISTRY="$TMP/registry.yaml" \
		TOOLROUTER_STORE="$2" \
		TOOLROUTER_LOG_LEVEL=warn \
		TOOLROUTER_API_KEYS= \
		"${SRV[@]}" "${3:-$BIN/toolrouterd}" >"$TMP/router-$1.log" 2>&1 &
	PIDS+=($!)
	PID[$1]=$!
	wait_http "router-$1" "http://127.0.0.1:${PORT[$1]}/healthz" "${PID[$1]}"
}
router memory memory://
router sqlite "sqlite://$TMP/bench.db"
[[ -n $PG_URL ]] && router postgres "$PG_URL"
for a in "${!ABL_BIN[@]}"; do
	router "sqlite-$a" "sqlite://$TMP/bench-$a.db" "${ABL_BIN[$a]}"
done

printf '%s' '{"msg":"hi"}' >"$TMP/echo.json"
printf '%s' '{"plan_id":"bench","tool_call":{"id":"call_1","type":"function","function":{"name":"test/echo","arguments":"{\"msg\":\"hi\"}"}}}' >"$TMP/route.json"
printf '%s' '{"plan_id":"bench-mcp","tool_call":{"id":"call_1","type":"function","function":{"name":"bench/echo","arguments":"{\"msg\":\"hi\"}"}}}' >"$TMP/mcp.json"

TARGETS=(direct)
[[ -n $NGINX ]] && TARGETS+=(nginx)
TARGETS+=(go-proxy)
[[ -n $FASTPROXY ]] && TARGETS+=(fast-proxy)
TARGETS+=(router-memory router-sqlite)
[[ -n $PG_URL ]] && TARGETS+=(router-postgres)

declare -A URL=(
	[direct]="http://127.0.0.1:$TOOL_PORT/echo" [nginx]="http://127.0.0.1:$NGINX_PORT/echo"
	[go-proxy]="http://127.0.0.1:$GOPROXY_PORT/echo" [fast-proxy]="http://127.0.0.1:$FASTPROXY_PORT/echo"
	[router-memory]="http://127.0.0.1:${PORT[memory]}/route" [router-sqlite]="http://127.0.0.1:${PORT[sqlite]}/route"
	[router-postgres]="http://127.0.0.1:${PORT[postgres]:-0}/route" [mcp-router]="http://127.0.0.1:${PORT[sqlite]}/route"
)
declare -A BODY=(
	[direct]="$TMP/echo.json" [nginx]="$TMP/echo.json" [go-proxy]="$TMP/echo.json" [fast-proxy]="$TMP/echo.json" [router-memory]="$TMP/route.json"
	[router-sqlite]="$TMP/route.json" [router-postgres]="$TMP/route.json" [mcp-router]="$TMP/mcp.json"
)
# The server whose CPU each target is charged: the one in front (the echo
# tool's own CPU is the same for every HTTP target).
declare -A CPU_OF=(
	[direct]="$TOOL_PID" [nginx]="${NGINX_PID:-}" [go-proxy]="$GOPROXY_PID" [fast-proxy]="$FASTPROXY_PID" [router-memory]="${PID[memory]}" [router-sqlite]="${PID[sqlite]}"
	[router-postgres]="${PID[postgres]:-}" [mcp-direct]="$MCP_PID" [mcp-router]="${PID[sqlite]}"
)
# Ablations: router-sqlite with a hand-written path built back in, measured
# among the others.
for a in "${!ABL_BIN[@]}"; do
	t="router-sqlite[$a]"
	TARGETS+=("$t")
	URL[$t]="http://127.0.0.1:${PORT[sqlite-$a]}/route" BODY[$t]=$TMP/route.json CPU_OF[$t]=${PID[sqlite-$a]}
done
TARGETS+=(mcp-direct mcp-router)
# … and the MCP path of each ablation (mcp-router[NAME]: the kept MCP fast
# path's ablation is -tags sdkmcp).
for a in "${!ABL_BIN[@]}"; do
	t="mcp-router[$a]"
	TARGETS+=("$t")
	URL[$t]="http://127.0.0.1:${PORT[sqlite-$a]}/route" BODY[$t]=$TMP/mcp.json CPU_OF[$t]=${PID[sqlite-$a]}
done
if [[ -n ${BENCH_ONLY:-} ]]; then
	only=()
	for t in "${TARGETS[@]}"; do [[ $t =~ $BENCH_ONLY ]] && only+=("$t"); done
	((${#only[@]})) || die "BENCH_ONLY=$BENCH_ONLY matches no target of: ${TARGETS[*]}"
	TARGETS=("${only[@]}")
fi

# Sanity: every target answers before anything is measured.
post() { curl -sf --max-time 5 -X POST -H 'Content-Type: application/json' --data-binary @"$2" "$1" || true; }
for t in "${TARGETS[@]}"; do
	[[ $t == mcp-direct ]] && continue
	want='"msg":"hi"'
	[[ $t == router-* || $t == mcp-router* ]] && want='"success":true'
	ok=""
	for i in $(seq 1 50); do # the MCP tool joins once discovered
		[[ $(post "${URL[$t]}" "${BODY[$t]}") == *$want* ]] && ok=1 && break
		sleep 0.1
	done
	[[ -n $ok ]] || die "$t did not answer as expected: $(post "${URL[$t]}" "${BODY[$t]}")"
done

# run T MODE-ARGS...: one measured run of target T: prints its JSON line
# with "cpu_us_per_call" (the server's CPU per completed call) added.
run() {
	local t=$1 out pids before after
	shift
	local gen=("${LOAD[@]}" "$TMP/mcpload" -url "http://127.0.0.1:$MCP_PORT/mcp" -tool echo -args '{"msg":"hi"}')
	[[ $t != mcp-direct ]] && gen=("${LOAD[@]}" "$TMP/loadgen" -url "${URL[$t]}" -body "${BODY[$t]}" -header 'Content-Type: application/json')
	"${gen[@]}" -name "$t-warmup" -duration "$WARMUP" -warmup 0 "$@" >/dev/null
	pids=$(tree "${CPU_OF[$t]}")
	before=$(cpu_ticks $pids)
	out=$("${gen[@]}" -name "$t" -duration "${RUN_DURATION:-$DURATION}" -warmup 0 "$@")
	after=$(cpu_ticks $pids)
	awk -v o="$out" -v d=$((after - before)) -v tick="$TICK" -v n="$(field "$out" requests)" 'BEGIN {
		sub(/}$/, "", o); printf "%s,\"cpu_us_per_call\":%.1f}\n", o, (n > 0 ? d / tick * 1e6 / n : 0) }'
}

log "machine: $CORES CPU cores; $PINNING"
log "runs: ${#TARGETS[@]} targets x $ROUNDS interleaved rounds, full speed ($CONCURRENCY workers), $DURATION each after a $WARMUP warmup"
declare -A RPS=() CPU=()
bad=0
for round in $(seq 1 "$ROUNDS"); do
	for t in "${TARGETS[@]}"; do
		log "round $round/$ROUNDS: $t"
		r=$(run "$t" -rate 0 -concurrency "$CONCURRENCY")
		printf '%s\n' "$r"
		if [[ $(field "$r" errors) != 0 || $(field "$r" non2xx) != 0 ]]; then
			log "error: $t had errors or failed calls: $r"
			bad=1
		fi
		RPS[$t]+="$(field "$r" rps) "
		CPU[$t]+="$(field "$r" cpu_us_per_call) "
	done
done

echo
echo "== toolrouterd side by side ($(date -u +%Y-%m-%dT%H:%M:%SZ), $CORES CPU cores) =="
echo "$PINNING; full speed, $CONCURRENCY workers, $DURATION per run,"
echo "median of $ROUNDS interleaved rounds [min-max]. cpu/call: CPU time of the server in front"
echo "(the tool itself for direct targets) per completed call, from /proc/PID/stat; PostgreSQL's"
echo "own CPU is not in router-postgres's figure."
printf '\n%-30s %20s %22s %12s %12s %14s\n' target 'rps [spread]' 'cpu us/call [spread]' 'rps/base' 'cpu/base' 'cpu/go-proxy'
declare -A MED=() MEDCPU=()
for t in "${TARGETS[@]}"; do
	read -r MED[$t] lo hi <<<"$(stats ${RPS[$t]})"
	rps="$(printf '%.0f [%.0f-%.0f]' "${MED[$t]}" "$lo" "$hi")"
	read -r MEDCPU[$t] clo chi <<<"$(stats ${CPU[$t]})"
	cpu="$(printf '%.1f [%.1f-%.1f]' "${MEDCPU[$t]}" "$clo" "$chi")"
	base=""
	case $t in
	router-sqlite\[*) base=router-sqlite ;;
	router-* | *-proxy) [[ -n $NGINX ]] && base=nginx ;;
	mcp-router\[*) base=mcp-router ;;
	mcp-router) base=mcp-direct ;;
	esac
	floor=-
	[[ $t == router-* ]] && floor="$(ratio "${MEDCPU[$t]}" "${MEDCPU[go-proxy]:-}")x"
	if [[ -n $base ]]; then
		printf '%-30s %20s %22s %12s %12s %14s\n' "$t" "$rps" "$cpu" "$(ratio "${MED[$t]}" "${MED[$base]:-}")x" "$(ratio "${MEDCPU[$t]}" "${MEDCPU[$base]:-}")x" "$floor"
	else
		printf '%-30s %20s %22s %12s %12s %14s\n' "$t" "$rps" "$cpu" - - "$floor"
	fi
done
echo
echo "rps/base, cpu/base: router-* against nginx (issue 10 aims: rps >= 0.6x, cpu <= 2x on the"
echo "default store, router-sqlite); mcp-router against mcp-direct (aim: rps >= 0.5x). go-proxy, a"
echo "bare Go reverse proxy, is the floor any Go service on net/http pays for the same hop;"
echo "fast-proxy is the same proxy on fasthttp instead of net/http. cpu/go-proxy: toolrouterd's"
echo "CPU per call against that floor (what routing, its checks and the store add to the hop)."
echo "router-sqlite[NAME]: the default build with BENCH_ABLATE's hand-written path NAME built in;"
echo "its rps/base and cpu/base are against router-sqlite (the twin earns its place at >= 5 %)."
[[ -z $NGINX ]] && echo "(nginx baseline skipped: nginx was not available; see the messages above)"

# ---------------------------------------------------------------------------
# Fixed rate, open loop: latency as users feel it at moderate load, each
# request timed from its scheduled send time (bench/loadgen, bench/mcpload).

if [[ $ROUTE_RATE != 0 ]]; then
	declare -A P50=() P99=() P999=() CPUR=() RATE_OF=()
	log "fixed rate: ${#TARGETS[@]} targets x $ROUNDS interleaved rounds, $RATE_DURATION each; HTTP $ROUTE_RATE req/s, MCP $MCP_RATE calls/s"
	for round in $(seq 1 "$ROUNDS"); do
		for t in "${TARGETS[@]}"; do
			RATE_OF[$t]=$ROUTE_RATE
			[[ $t == mcp-* ]] && RATE_OF[$t]=$MCP_RATE
			log "fixed-rate round $round/$ROUNDS: $t"
			r=$(RUN_DURATION=$RATE_DURATION run "$t" -rate "${RATE_OF[$t]}" -concurrency 256)
			printf '%s\n' "$r"
			if [[ $(field "$r" errors) != 0 || $(field "$r" non2xx) != 0 || $(field "$r" dropped) =~ ^[1-9] ]]; then
				log "error: $t had errors, failed or dropped calls: $r"
				bad=1
			fi
			P50[$t]+="$(field "$r" p50_ms) " P99[$t]+="$(field "$r" p99_ms) " P999[$t]+="$(field "$r" p999_ms) "
			CPUR[$t]+="$(field "$r" cpu_us_per_call) "
		done
	done
	echo
	echo "== fixed rate, open loop ($(date -u +%Y-%m-%dT%H:%M:%SZ)): HTTP targets at $ROUTE_RATE req/s, MCP at $MCP_RATE calls/s =="
	echo "latency in ms from each request's scheduled send time; median of $ROUNDS interleaved rounds [min-max];"
	echo "+direct: the median's excess over direct (mcp-router: over mcp-direct)."
	printf '\n%-30s %20s %20s %20s %10s %10s %12s\n' target p50 p99 p99.9 'p99+direct' 'p99.9+dir' 'cpu us/call'
	declare -A M99=() M999=()
	for t in "${TARGETS[@]}"; do
		cols=()
		for q in P50 P99 P999; do
			declare -n arr=$q
			read -r m lo hi <<<"$(stats ${arr[$t]})"
			cols+=("$(printf '%.2f [%.2f-%.2f]' "$m" "$lo" "$hi")")
			[[ $q == P99 ]] && M99[$t]=$m
			[[ $q == P999 ]] && M999[$t]=$m
			unset -n arr
		done
		base=direct
		[[ $t == mcp-* ]] && base=mcp-direct
		read -r c _ <<<"$(stats ${CPUR[$t]})"
		printf '%-30s %20s %20s %20s %10s %10s %12.1f\n' "$t" "${cols[@]}" \
			"$(awk -v a="${M99[$t]}" -v b="${M99[$base]:-}" 'BEGIN { printf "%+.2f", a - b }')" \
			"$(awk -v a="${M999[$t]}" -v b="${M999[$base]:-}" 'BEGIN { printf "%+.2f", a - b }')" "$c"
	done
	echo
	echo "Targets (issue 20, default store router-sqlite): /route p99 <= direct + 1 ms and p99.9 <="
	echo "direct + 3 ms at 1,000 req/s; MCP p99 <= mcp-direct + 1 ms at 500 calls/s."
fi

# ---------------------------------------------------------------------------
# Soak: a fixed rate on the default store; RSS and goroutines should be flat.

if [[ $SOAK != 0 && $SOAK != 0s ]]; then
	p=${PID[sqlite]}
	probe() {
		local rss gor
		rss=$(awk '/^VmRSS:/ { printf "%.1f MiB", $2 / 1024 }' "/proc/$p/status")
		gor=$(curl -sf --max-time 5 "http://127.0.0.1:${PORT[sqlite]}/metrics" | awk '/^go_goroutines / { print $2 }')
		echo "rss $rss, goroutines $gor"
	}
	log "soak: $SOAK at $SOAK_RATE req/s on router-sqlite"
	"${LOAD[@]}" "$TMP/loadgen" -url "${URL[router-sqlite]}" -body "$TMP/route.json" -header 'Content-Type: application/json' \
		-name soak-warmup -rate "$SOAK_RATE" -concurrency 64 -duration 2s -warmup 0 >/dev/null
	start=$(probe)
	r=$("${LOAD[@]}" "$TMP/loadgen" -url "${URL[router-sqlite]}" -body "$TMP/route.json" -header 'Content-Type: application/json' \
		-name soak -rate "$SOAK_RATE" -concurrency 64 -duration "$SOAK" -warmup 0)
	end=$(probe)
	printf '%s\n' "$r"
	echo
	echo "-- soak: $SOAK at $SOAK_RATE req/s, router-sqlite (default store) --"
	echo "start: $start"
	echo "end:   $end"
	echo "requests $(field "$r" requests), errors $(field "$r" errors), non2xx $(field "$r" non2xx), p99 $(field "$r" p99_ms) ms"
	if [[ $(field "$r" errors) != 0 || $(field "$r" non2xx) != 0 ]]; then
		log "error: the soak had errors or non-2xx answers"
		bad=1
	fi
fi
exit $bad
