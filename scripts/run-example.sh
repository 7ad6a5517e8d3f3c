#!/usr/bin/env bash
# `make run` (README, Walkthrough): the example tool server on TOOLS_ADDR and
# toolrouterd on ADDR with REGISTRY (default examples/registry.yaml), in the
# foreground.
#
# - Fails at once, saying which, when ADDR or TOOLS_ADDR is taken.
# - Prints toolrouterd's pid (also in bin/toolrouterd.pid, or
#   bin/toolrouterd-HOST-PORT.pid for an ADDR other than 127.0.0.1:8080, so
#   that two make runs keep their own) for `kill -HUP` (reload the registry).
# - Ctrl-C stops toolrouterd gracefully and ends with status 0: toolrouterd
#   runs as the terminal's foreground job, so the interrupt goes to it
#   alone, not to make (which would report it as an error).
set -euo pipefail

: "${ADDR:?}" "${TOOLS_ADDR:?}" "${STORE:?}" "${BIN:=bin}" "${REGISTRY:=examples/registry.yaml}"
pidfile="$BIN/toolrouterd.pid"
if [[ $ADDR != 127.0.0.1:8080 ]]; then
	pidfile="$BIN/toolrouterd-${ADDR//[^A-Za-z0-9.]/-}.pid"
fi

# The example registries send their tools to 127.0.0.1:9001; with another
# TOOLS_ADDR toolrouterd reads a copy pointing there ($BIN/registry.yaml,
# the file to edit before a SIGHUP).
registry=$REGISTRY
if [[ $TOOLS_ADDR != 127.0.0.1:9001 ]]; then
	mkdir -p "$BIN"
	sed "s#http://127\.0\.0\.1:9001/#http://$TOOLS_ADDR/#" "$registry" >"$BIN/registry.yaml"
	registry=$BIN/registry.yaml
	echo "make run: TOOLS_ADDR is $TOOLS_ADDR: serving $registry, a copy of $REGISTRY with that address"
fi

# in_use HOST:PORT succeeds when something accepts connections there.
in_use() {
	local host=${1%:*} port=${1##*:}
	[[ -z $host || $host == 0.0.0.0 || $host == "[::]" ]] && host=127.0.0.1
	(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

if in_use "$TOOLS_ADDR"; then
	echo "make run: TOOLS_ADDR $TOOLS_ADDR is already in use (another make run?);" \
		"stop what listens on it (ss -ltnp 'sport = :${TOOLS_ADDR##*:}') or pick another: make run TOOLS_ADDR=127.0.0.1:9002" >&2
	exit 1
fi
if in_use "$ADDR"; then
	echo "make run: ADDR $ADDR is already in use; stop what listens on it (ss -ltnp 'sport = :${ADDR##*:}')" \
		"or pick another address: make run ADDR=127.0.0.1:8081" >&2
	exit 1
fi

tools= service= pid=
cleanup() {
	trap - EXIT INT TERM
	[[ -n $service ]] && kill -TERM "$service" 2>/dev/null && wait "$service" 2>/dev/null
	[[ -n $tools ]] && kill -TERM "$tools" 2>/dev/null && wait "$tools" 2>/dev/null
	# Only our own pidfile: another make run on the same ADDR may own it now.
	[[ $(cat "$pidfile" 2>/dev/null) == "$pid" ]] && rm -f "$pidfile"
	return 0
}
trap cleanup EXIT
# make forwards SIGTERM; an interrupt here (no terminal) stops the service.
trap 'exit 0' INT TERM

# Job control gives each job its own process group and hands the terminal
# to the foreground one, so that Ctrl-C reaches toolrouterd only.
[[ -t 0 ]] && set -m

EXAMPLETOOLS_ADDR=$TOOLS_ADDR "$BIN/exampletools" &
tools=$!
for ((i = 0; ; i++)); do
	in_use "$TOOLS_ADDR" && break
	if ! kill -0 "$tools" 2>/dev/null || ((i >= 100)); then
		wait "$tools" 2>/dev/null || true
		tools=
		echo "make run: the example tool server did not start on $TOOLS_ADDR (see above)" >&2
		exit 1
	fi
	sleep 0.1
done

TOOLROUTER_ADDR=$ADDR TOOLROUTER_REGISTRY=$registry TOOLROUTER_STORE=$STORE \
	TOOLROUTER_LOG_FORMAT=${TOOLROUTER_LOG_FORMAT:-console} "$BIN/toolrouterd" &
service=$!
pid=$service
mkdir -p "$BIN"
echo "$service" >"$pidfile"
echo "make run: toolrouterd pid $service (reload the registry: kill -HUP $service, or kill -HUP \$(cat $pidfile)); Ctrl-C stops it"
status=0
if [[ -o monitor ]]; then
	fg %2 >/dev/null || status=$?
else
	wait "$service" || status=$?
fi
service=
exit "$status"
