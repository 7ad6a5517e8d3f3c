#!/usr/bin/env bash
# Installs the official MCP conformance suite @modelcontextprotocol/conformance,
# pinned, that e2e/mcpconformance_test.go runs against toolrouterd's /mcp.
# Needs Node.js (20 or later) and npm. Idempotent: does nothing when the
# pinned version is already installed.
#
#   bash scripts/install-mcp-conformance.sh [DIR]
#
# DIR defaults to $MCP_CONFORMANCE_DIR, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-conformance (where the
# test looks by default). Run the suite with
# scripts/run-mcp-conformance.sh DIR ARGS… (it adds the Node 20 shim).
set -euo pipefail

# 0.2.0-alpha.12 is the first release with the 2026-07-28 requirement set.
version=0.2.0-alpha.12
pkg=@modelcontextprotocol/conformance
dir=${1:-${MCP_CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-conformance}}
# One install at a time: concurrent npm installs into one folder corrupt it.
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
bin=$dir/node_modules/.bin/conformance
manifest=$dir/node_modules/$pkg/package.json

installed_version() {
	[[ -x $bin && -f $manifest ]] || return 1
	node -p 'require(process.argv[1]).version' "$manifest" 2>/dev/null
}

if [[ $(installed_version || true) == "$version" ]]; then
	exit 0
fi
for tool in node npm; do
	if ! command -v "$tool" >/dev/null; then
		echo "install-mcp-conformance: $tool is not on PATH: install Node.js (20 or later) and npm" >&2
		exit 1
	fi
done

mkdir -p "$dir"
echo "install-mcp-conformance: npm install $pkg@$version into $dir"
npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error "$pkg@$version"

if [[ $(installed_version || true) != "$version" ]]; then
	echo "install-mcp-conformance: npm install left no $bin at version $version" >&2
	exit 1
fi
echo "install-mcp-conformance: installed $bin"
