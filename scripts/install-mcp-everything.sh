#!/usr/bin/env bash
# Installs the MCP reference server @modelcontextprotocol/server-everything,
# pinned, that e2e/mcp_test.go starts (streamable HTTP transport). Needs
# Node.js and npm. Idempotent: does (and says) nothing when the pinned
# version is already installed.
#
#   bash scripts/install-mcp-everything.sh [DIR]
#
# DIR defaults to $MCP_EVERYTHING_DIR, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-everything (where the test
# looks by default). The server's command is then
# DIR/node_modules/.bin/mcp-server-everything.
set -euo pipefail

version=2026.8.31
pkg=@modelcontextprotocol/server-everything
dir=${1:-${MCP_EVERYTHING_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-everything}}
# One install at a time: concurrent npm installs into one folder corrupt it.
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
bin=$dir/node_modules/.bin/mcp-server-everything
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
		echo "install-mcp-everything: $tool is not on PATH: install Node.js (20 or later) and npm" >&2
		exit 1
	fi
done

mkdir -p "$dir"
echo "install-mcp-everything: npm install $pkg@$version into $dir"
npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error "$pkg@$version"

if [[ $(installed_version || true) != "$version" ]]; then
	echo "install-mcp-everything: npm install left no $bin at version $version" >&2
	exit 1
fi
echo "install-mcp-everything: installed $bin"
