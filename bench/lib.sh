# Helpers shared by bench/load.sh and bench/mcp.sh (sourced; they define
# log, die and TMP before calling these).

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
