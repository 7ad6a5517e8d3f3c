#!/usr/bin/env bash
# Installs what `make test` needs and does not find, and says nothing when
# everything is there:
#   - gcc and the C library headers: the race detector (go test -race) needs cgo;
#   - Node.js and npm, then the pinned MCP reference server
#     (scripts/install-mcp-everything.sh) that e2e/mcp_test.go starts, and
#     the stdio one (scripts/install-mcp-memory.sh) of e2e/mcpstdio_test.go,
#     and the MCP Apps example server (scripts/install-mcp-apps.sh) of
#     e2e/mcpapps_test.go;
#   - the PostgreSQL server binaries (scripts/install-postgres.sh) that
#     internal/store/pgtest starts a throwaway server from;
#   - Chromium (/usr/bin/chromium), the headless browser e2e/console_test.go
#     drives the console with.
# (Helm, for the chart tests, is tools/helm: deployments/helm_test.go builds
# it with the go command, into the Go build cache, when it first runs.)
# Debian/Ubuntu (apt-get), as root or through sudo.
#
#   bash scripts/install-test-deps.sh
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v gcc >/dev/null || need+=(gcc)
[[ -e /usr/include/stdlib.h ]] || need+=(libc6-dev)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
[[ -x /usr/bin/chromium ]] || need+=(chromium)
if ((${#need[@]})); then
	if ! command -v apt-get >/dev/null; then
		echo "install-test-deps: missing ${need[*]} and no apt-get here: install them yourself" >&2
		exit 1
	fi
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		if ! command -v sudo >/dev/null; then
			echo "install-test-deps: missing ${need[*]}: run as root (or install sudo)" >&2
			exit 1
		fi
		sudo=(sudo)
	fi
	echo "install-test-deps: apt-get install ${need[*]}"
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
bash install-postgres.sh
bash install-mcp-everything.sh
bash install-mcp-memory.sh
bash install-mcp-apps.sh
