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
source "$(dirname "$0")/npm-pin.sh"
npm_pin install-mcp-conformance "$pkg" "$version" "$dir" conformance
