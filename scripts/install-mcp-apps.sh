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
source "$(dirname "$0")/npm-pin.sh"
npm_pin install-mcp-apps "$pkg" "$version" "$dir" mcp-server-basic-vanillajs
