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
source "$(dirname "$0")/npm-pin.sh"
npm_pin install-mcp-everything "$pkg" "$version" "$dir" mcp-server-everything
