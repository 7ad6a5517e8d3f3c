#!/usr/bin/env bash
# Installs the MCP reference server @modelcontextprotocol/server-basic-vanillajs,
# pinned, that e2e/mcpapps_test.go runs as a stdio backend (an MCP Apps server). Needs
# Node.js and npm. Idempotent: does nothing when the pinned version is
# already installed.
#
#   bash scripts/install-mcp-apps.sh [DIR]
#
# DIR defaults to $MCP_APPS_DIR, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-apps (where the test
# looks by default). The server's command is then
# DIR/node_modules/.bin/mcp-server-basic-vanillajs.
set -euo pipefail

version=2.0.3
pkg=@modelcontextprotocol/server-basic-vanillajs
dir=${1:-${MCP_APPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-apps}}
# One install at a time: concurrent npm installs into one folder corrupt it.
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
bin=$dir/node_modules/.bin/mcp-server-basic-vanillajs
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
		echo "install-mcp-apps: $tool is not on PATH: install Node.js (20 or later) and npm" >&2
		exit 1
	fi
done

mkdir -p "$dir"
echo "install-mcp-apps: npm install $pkg@$version into $dir"
npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error "$pkg@$version"

if [[ $(installed_version || true) != "$version" ]]; then
	echo "install-mcp-apps: npm install left no $bin at version $version" >&2
	exit 1
fi
echo "install-mcp-apps: installed $bin"
