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
