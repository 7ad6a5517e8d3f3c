#!/usr/bin/env bash
# Installs the MCP reference server @modelcontextprotocol/server-memory,
# pinned, that e2e/mcpstdio_test.go runs as a stdio backend. Needs
# Node.js and npm. Idempotent: does nothing when the pinned version is
# already installed.
#
#   bash scripts/install-mcp-memory.sh [DIR]
#
# DIR defaults to $MCP_MEMORY_DIR, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-memory (where the test
# looks by default). The server's command is then
# DIR/node_modules/.bin/mcp-server-memory.
set -euo pipefail

version=2026.8.31
pkg=@modelcontextprotocol/server-memory
dir=${1:-${MCP_MEMORY_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/mcp-memory}}
source "$(dirname "$0")/npm-pin.sh"
npm_pin install-mcp-memory "$pkg" "$version" "$dir" mcp-server-memory
