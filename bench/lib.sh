# Helpers shared by the bench/*.sh scripts
# (sourced; they set BENCH, their make target, first, and TMP before
# starting servers).

log() { printf '%s: %s\n' "$BENCH" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# need_bins FILE...: each is built, and go and curl are on PATH.
need_bins() {
	local b
	for b; do
		[[ -x $b ]] || die "$b is missing: run \`make build\` first (or \`make $BENCH\`)"
	done
	command -v go >/dev/null || die "go is not on PATH"
	command -v curl >/dev/null || die "curl is needed to wait for the servers"
}

# stop_pids: ends the processes in PIDS and waits for them.
stop_pids() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}

declare -A TAKEN=()

port_in_use() {
	if command -v ss >/dev/null; then
		[[ -n $(ss -Htln "sport = :$1" 2>/dev/null) ]] && return 0
	fi
	(: </dev/tcp/127.0.0.1/"$1") 2>/dev/null
}

# free_port VAR: sets VAR to a free loopback port not handed out before
# (in this shell: not run in a subshell, so TAKEN remembers it).
free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		[[ -n ${TAKEN[$p]:-} ]] && continue
		if ! port_in_use "$p"; then
			TAKEN[$p]=1
			printf -v "$1" '%s' "$p"
			return 0
		fi
	done
	die "no free loopback port found"
}

# wait_http NAME URL PID: until URL answers (any HTTP status), or fail.
wait_http() {
	local name=$1 url=$2 pid=$3 i
	for i in $(seq 1 100); do
		if ! kill -0 "$pid" 2>/dev/null; then
			log "$name exited during start-up; its log:"
			cat "$TMP/$name.log" >&2 || true
			exit 1
		fi
		if curl -s -o /dev/null --max-time 1 "$url" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	log "$name did not answer $url within 10s; its log:"
	cat "$TMP/$name.log" >&2 || true
	exit 1
}

# build_ablations KNOB SPECS: for each NAME:TAG[,TAG] of SPECS (a
# decision-table ablation), toolrouterd built with those tags into $TMP;
# ABL_BIN[NAME] is its path (the caller declares ABL_BIN: declare -A).
# KNOB names the setting in errors.
build_ablations() {
	local knob=$1 a
	for a in $2; do
		[[ $a == *:* ]] || die "$knob entry $a: want NAME:TAG[,TAG]"
		log "building toolrouterd with tags ${a#*:} for ${a%%:*}"
		go build -tags "${a#*:}" -o "$TMP/toolrouterd-${a%%:*}" ./cmd/toolrouterd
		ABL_BIN[${a%%:*}]=$TMP/toolrouterd-${a%%:*}
	done
}

# start_exampletools: $BIN/exampletools on a free port TOOL_PORT, logging
# to $TMP/exampletools.log, waited for.
start_exampletools() {
	free_port TOOL_PORT
	"$BIN/exampletools" -addr "127.0.0.1:$TOOL_PORT" >"$TMP/exampletools.log" 2>&1 &
	PIDS+=($!)
	wait_http exampletools "http://127.0.0.1:$TOOL_PORT/healthz" "${PIDS[-1]}"
}

# echo_registry FILE [MCP_PORT]: the registry the benchmarks route through,
# test/echo on the example tools at TOOL_PORT, and with MCP_PORT the MCP
# echo server there as bench (its tool echo), written to FILE.
echo_registry() {
	cat >"$1" <<EOF
tools:
  - name: test/echo
    description: Echo tool (benchmark)
    endpoint: http://127.0.0.1:$TOOL_PORT/echo
    kind: tool
    input_schema:
      type: object
      properties: {msg: {type: string}}
    timeout: 10s
EOF
	[[ -z ${2:-} ]] || cat >>"$1" <<EOF
mcp_servers:
  - name: bench
    url: http://127.0.0.1:$2/mcp
    tools: [echo]
    timeout: 10s
EOF
}

# field JSON KEY: a number (or bare value) of a load program's flat JSON line.
field() {
	sed -E 's/.*"'"$2"'":("[^"]*"|[^,}]*).*/\1/' <<<"$1"
}

# num V: V if it is a number, else "-".
num() {
	if [[ $1 =~ ^[0-9.]+$ ]]; then echo "$1"; else echo -; fi
}

# ratio A B: A/B with 2 decimals, or "-" when B is 0.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}

# pin_servers: SRV and LOAD, the commands that pin a server to
# SERVER_CPU and a load generator to LOAD_CPU (taskset; empty when it is
# missing or there are fewer than 2 cores), PINNING saying which, CORES, and
# TICK (clock ticks per second, for cpu_ticks).
pin_servers() {
	CORES=$(nproc 2>/dev/null || echo 1)
	SRV=() LOAD=()
	if command -v taskset >/dev/null && ((CORES >= 2)); then
		SRV=(taskset -c "$SERVER_CPU")
		LOAD=(taskset -c "$LOAD_CPU")
		PINNING="servers on CPU $SERVER_CPU, load generators on CPU $LOAD_CPU (taskset)"
	else
		PINNING="NOT pinned (taskset missing or fewer than 2 cores): figures are less comparable"
	fi
	TICK=$(getconf CLK_TCK)
}

# cpu_ticks PID...: utime+stime of the processes (every thread), in ticks.
cpu_ticks() {
	local sum=0 pid stat
	for pid in "$@"; do
		stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		stat=${stat##*) } # after the command name, which may hold spaces
		read -r -a f <<<"$stat"
		sum=$((sum + f[11] + f[12])) # fields 14 and 15 of stat(5)
	done
	echo "$sum"
}

# tree PID: PID and its children (nginx's master and worker).
tree() { echo "$1" $(pgrep -P "$1" 2>/dev/null || true); }

# stats V...: median, min and max.
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s %s %s\n", m, v[1], v[NR] }'; }

# start_postgres: a throwaway PostgreSQL (shipped settings, fsync on)
# under $TMP/pg when it is installed, pinned with the servers (SRV), run by
# an unprivileged user as the server requires: PG_URL its URL and PG_PID
# its postmaster (the backends are its children), or PG_URL empty when it
# could not start (said on stderr).
start_postgres() {
	PG_URL=""
	PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
	if [[ -n $PG_BIN && -x $PG_BIN/initdb ]]; then
		free_port PG_PORT
		mkdir -p "$TMP/pg/sock"
		PG_USER=$(id -un)
		as_pg=()
		if [[ $(id -u) == 0 ]]; then
			PG_USER=nobody
			id postgres >/dev/null 2>&1 && PG_USER=postgres
			chown -R "$PG_USER" "$TMP/pg"
			as_pg=(su "$PG_USER" -s /bin/sh -c)
		fi
		pg() { if ((${#as_pg[@]})); then "${as_pg[@]}" "$*"; else sh -c "$*"; fi; }
		if pg "$PG_BIN/initdb -D $TMP/pg/data --username=postgres --auth=trust --encoding=UTF8 --locale=C" >"$TMP/pg/initdb.log" 2>&1; then
			pg "exec ${SRV[*]} $PG_BIN/postgres -D $TMP/pg/data -p $PG_PORT -k $TMP/pg/sock -c listen_addresses=127.0.0.1 -c max_connections=200" >"$TMP/pg/postgres.log" 2>&1 &
			for i in $(seq 1 100); do
				PG_PID=$(head -1 "$TMP/pg/data/postmaster.pid" 2>/dev/null || true)
				if [[ -n $PG_PID ]] && pg "$PG_BIN/pg_isready -q -h 127.0.0.1 -p $PG_PORT"; then
					PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
					break
				fi
				sleep 0.1
			done
			if [[ -z $PG_URL ]]; then
				log "SKIPPING PostgreSQL: PostgreSQL did not start; its log:"
				cat "$TMP/pg/postgres.log" >&2
			fi
		else
			log "SKIPPING PostgreSQL: initdb failed:"
			cat "$TMP/pg/initdb.log" >&2
		fi
	else
		log "SKIPPING PostgreSQL: no PostgreSQL server (bash scripts/install-postgres.sh installs it)"
	fi
}

# nginx: use the one on PATH, else install it from Debian packages.

NGINX=""
find_nginx() {
	NGINX=$(command -v nginx || true)
	[[ -z $NGINX && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
	[[ -n $NGINX ]]
}

install_nginx() {
	if [[ -n ${BENCH_NO_INSTALL:-} ]]; then
		log "BENCH_NO_INSTALL is set: not installing nginx"
		return 1
	fi
	if ! command -v apt-get >/dev/null || ! command -v apt-cache >/dev/null; then
		log "no apt-get on this machine: cannot install nginx"
		return 1
	fi
	local sudo=""
	if [[ $(id -u) != 0 ]]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo="sudo -n"
		else
			log "not root and no password-less sudo: cannot install nginx"
			return 1
		fi
	fi
	log "nginx not found: installing it from Debian packages (apt-get update && apt-get install)"
	$sudo apt-get update -qq >&2 || { log "apt-get update failed"; return 1; }
	local pkg=""
	for p in nginx-light nginx; do
		# (no `| grep -q`: with pipefail, grep closing the pipe early fails it)
		if [[ $(apt-cache policy "$p" 2>/dev/null) =~ Candidate:\ [0-9] ]]; then
			pkg=$p
			break
		fi
	done
	[[ -n $pkg ]] || { log "neither nginx-light nor nginx is available from apt"; return 1; }
	# Keep the package's maintainer scripts from starting a system nginx on
	# port 80 (policy-rc.d 101 = "action not allowed"), unless a policy is
	# already in place.
	local policy=/usr/sbin/policy-rc.d made_policy=""
	if [[ ! -e $policy ]]; then
		if printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 755 "$policy"; then
			made_policy=1
		fi
	fi
	local rc=0
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$pkg" >&2 || rc=$?
	[[ -n $made_policy ]] && $sudo rm -f "$policy"
	if [[ $rc != 0 ]]; then
		log "apt-get install $pkg failed (exit $rc)"
		return 1
	fi
	log "installed $pkg"
}

# ensure_nginx: sets NGINX to nginx's path, installing it when missing;
# "" (with a message) when that is impossible.
ensure_nginx() {
	if ! find_nginx; then
		if ! install_nginx || ! find_nginx; then
			log "SKIPPING the nginx baseline: nginx is not available (see above)"
			NGINX=""
		fi
	fi
}

# start_nginx PORT TOOL_PORT [PREFIX...]: nginx (one worker, no access log)
# on 127.0.0.1:PORT as a keep-alive reverse proxy to 127.0.0.1:TOOL_PORT,
# started through PREFIX (taskset …) when given; its pid is added to PIDS.
# Clears NGINX (baseline skipped) when nginx rejects the configuration.
start_nginx() {
	local NGINX_PORT=$1 TOOL_PORT=$2
	shift 2
	mkdir -p "$TMP/nginx"
	cat >"$TMP/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/nginx.log warn;

events {
    worker_connections 4096;
}

http {
    access_log off;
    client_body_temp_path $TMP/nginx/client_body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fastcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi;
    scgi_temp_path $TMP/nginx/scgi;

    upstream tool {
        server 127.0.0.1:$TOOL_PORT;
        keepalive 64;
    }

    server {
        listen 127.0.0.1:$NGINX_PORT;
        location / {
            proxy_pass http://tool;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
EOF
	if ! "$NGINX" -t -q -e "$TMP/nginx.log" -c "$TMP/nginx.conf" -p "$TMP/nginx" 2>"$TMP/nginx-test.log"; then
		log "SKIPPING the nginx baseline: nginx rejected its configuration:"
		cat "$TMP/nginx-test.log" >&2
		NGINX=""
	else
		"$@" "$NGINX" -e "$TMP/nginx.log" -c "$TMP/nginx.conf" -p "$TMP/nginx" >>"$TMP/nginx.log" 2>&1 &
		PIDS+=($!)
		wait_http nginx "http://127.0.0.1:$NGINX_PORT/healthz" "${PIDS[-1]}"
	fi
}
