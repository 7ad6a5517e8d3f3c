#!/usr/bin/env bash
# `make run` (README, Quickstart and Walkthrough): the example tool server,
# an offline stand-in model (cmd/fakellm -demo, OpenAI's wire format) and
# toolrouterd on ADDR with REGISTRY (default examples/registry.yaml), in the
# foreground.
#
# - ADDR taken: fails at once, saying so. TOOLS_ADDR or LLM_ADDR given and
#   taken: the same. Not given: 127.0.0.1:9001 (tools) and 127.0.0.1:9002
#   (model), or a free port when that is taken (another make run), so that
#   `make run ADDR=127.0.0.1:8081` next to a first one just works.
#   LLM_ADDR=off starts no model.
# - Prints the quickstart command for the model it started (no key, no
#   internet), and for Ollama when one answers on 127.0.0.1:11434.
# - Prints toolrouterd's pid (also in bin/toolrouterd.pid, or
#   bin/toolrouterd-HOST-PORT.pid for an ADDR other than 127.0.0.1:8080, so
#   that two make runs keep their own) for `kill -HUP` (reload the registry).
# - Ctrl-C stops toolrouterd gracefully and ends with status 0: toolrouterd
#   runs as the terminal's foreground job, so the interrupt goes to it
#   alone, not to make (which would report it as an error).
set -euo pipefail

: "${ADDR:?}" "${STORE:?}" "${BIN:=bin}" "${REGISTRY:=examples/registry.yaml}" "${TOOLS_ADDR:=}" "${LLM_ADDR:=}"
suffix=
if [[ $ADDR != 127.0.0.1:8080 ]]; then
	suffix="-${ADDR//[^A-Za-z0-9.]/-}"
fi
pidfile="$BIN/toolrouterd$suffix.pid"

# in_use HOST:PORT succeeds when something accepts connections there.
in_use() {
	local host=${1%:*} port=${1##*:}
	[[ -z $host || $host == 0.0.0.0 || $host == "[::]" ]] && host=127.0.0.1
	(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

if in_use "$ADDR"; then
	echo "make run: ADDR $ADDR is already in use; stop what listens on it (ss -ltnp 'sport = :${ADDR##*:}')" \
		"or pick another address: make run ADDR=127.0.0.1:8081" >&2
	exit 1
fi

# choose NAME GIVEN DEFAULT: the address to listen on. A given one must be
# free; the default is replaced by port 0 (a free one) when taken.
choose() {
	local name=$1 given=$2 default=$3
	if [[ -n $given ]]; then
		if in_use "$given"; then
			echo "make run: $name $given is already in use (another make run?); stop what listens on it" \
				"(ss -ltnp 'sport = :${given##*:}'), pick another, or leave $name unset to get a free port" >&2
			return 1
		fi
		echo "$given"
	elif in_use "$default"; then
		echo "127.0.0.1:0"
	else
		echo "$default"
	fi
}

tools_addr=$(choose TOOLS_ADDR "$TOOLS_ADDR" 127.0.0.1:9001)
llm_addr=off
if [[ $LLM_ADDR != off ]]; then
	llm_addr=$(choose LLM_ADDR "$LLM_ADDR" 127.0.0.1:9002)
	if [[ ! -x $BIN/fakellm ]]; then
		echo "make run: no $BIN/fakellm (make build builds it): starting no offline model"
		llm_addr=off
	fi
fi

tools= llm= service= pid=
lines=$(mktemp -d)
cleanup() {
	trap - EXIT INT TERM
	[[ -n $service ]] && kill -TERM "$service" 2>/dev/null && wait "$service" 2>/dev/null
	[[ -n $llm ]] && kill -TERM "$llm" 2>/dev/null && wait "$llm" 2>/dev/null
	[[ -n $tools ]] && kill -TERM "$tools" 2>/dev/null && wait "$tools" 2>/dev/null
	rm -rf "$lines"
	# Only our own pidfile: another make run on the same ADDR may own it now.
	[[ $(cat "$pidfile" 2>/dev/null) == "$pid" ]] && rm -f "$pidfile"
	return 0
}
trap cleanup EXIT
# make forwards SIGTERM; an interrupt here (no terminal) stops the service.
trap 'exit 0' INT TERM

# started FILE REGEX PID: waits (10 s at most) for the start-up line the
# server copies to FILE and prints the regex's group (the address it
# listens on); fails when the server exits first.
started() {
	local file=$1 re=$2 pid=$3
	for ((i = 0; i < 100; i++)); do
		if [[ -s $file && $(<"$file") =~ $re ]]; then
			echo "${BASH_REMATCH[1]}"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Job control gives each job its own process group and hands the terminal
# to the foreground one, so that Ctrl-C reaches toolrouterd only.
[[ -t 0 ]] && set -m
jobs=0

# Each server's start-up line goes to the terminal and to a file, where
# `started` reads the address it bound.
EXAMPLETOOLS_ADDR=$tools_addr "$BIN/exampletools" 2> >(tee "$lines/tools" >&2) &
tools=$!
jobs=$((jobs + 1))
if ! tools_url=$(started "$lines/tools" 'listening on (http://[^[:space:]]+)' "$tools"); then
	echo "make run: the example tool server did not start on $tools_addr (see above)" >&2
	exit 1
fi

if [[ $llm_addr != off ]]; then
	"$BIN/fakellm" -provider openai -demo -addr "$llm_addr" > >(tee "$lines/llm") &
	llm=$!
	jobs=$((jobs + 1))
	if ! llm_url=$(started "$lines/llm" 'base_url=([^[:space:]]+)' "$llm"); then
		echo "make run: the offline model (fakellm) did not start on $llm_addr (see above)" >&2
		exit 1
	fi
fi

# The example registries send their tools to 127.0.0.1:9001; on another
# address toolrouterd reads a copy pointing there ($BIN/registry.yaml, or
# $BIN/registry-HOST-PORT.yaml for another ADDR: the file to edit before a
# SIGHUP).
registry=$REGISTRY
if [[ $tools_url != http://127.0.0.1:9001 ]]; then
	mkdir -p "$BIN"
	registry=$BIN/registry$suffix.yaml
	sed "s#http://127\.0\.0\.1:9001/#$tools_url/#" "$REGISTRY" >"$registry"
	echo "make run: the example tools are on $tools_url: serving $registry, a copy of $REGISTRY with that address"
fi

TOOLROUTER_ADDR=$ADDR TOOLROUTER_REGISTRY=$registry TOOLROUTER_STORE=$STORE \
	TOOLROUTER_LOG_FORMAT=${TOOLROUTER_LOG_FORMAT:-console} "$BIN/toolrouterd" &
service=$!
pid=$service
jobs=$((jobs + 1))
mkdir -p "$BIN"
echo "$service" >"$pidfile"
echo "make run: toolrouterd pid $service (reload the registry: kill -HUP $service, or kill -HUP \$(cat $pidfile)); Ctrl-C stops it"

# The hints once toolrouterd answers (it may still refuse to start: then
# its own message says why).
for ((i = 0; i < 100; i++)); do
	in_use "$ADDR" && break
	kill -0 "$service" 2>/dev/null || break
	sleep 0.1
done
router=
[[ $ADDR != 127.0.0.1:8080 ]] && router="TOOLROUTER_URL=http://$ADDR "
echo "make run: up when curl -s http://$ADDR/healthz says ok; the console is http://$ADDR/ui"
if [[ -n $llm ]]; then
	echo "make run: the quickstart against the offline model (fakellm -demo: it answers sums), no key needed:"
	echo "  ${router}OPENAI_BASE_URL=$llm_url python3 examples/quickstart/quickstart.py \"What is 2 + 3?\""
fi
if [[ -z $LLM_ADDR ]] && in_use 127.0.0.1:11434; then
	echo "make run: Ollama answers on 127.0.0.1:11434; with a model you pulled that calls tools:"
	echo "  ${router}OPENAI_BASE_URL=http://127.0.0.1:11434/v1 MODEL=qwen2.5:7b python3 examples/quickstart/quickstart.py \"What is 2 + 3?\""
fi

status=0
if [[ -o monitor ]]; then
	fg "%$jobs" >/dev/null || status=$?
else
	wait "$service" || status=$?
fi
service=
exit "$status"
