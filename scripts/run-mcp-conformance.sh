#!/usr/bin/env bash
# Runs the MCP conformance suite installed by install-mcp-conformance.sh:
#
#   bash scripts/run-mcp-conformance.sh DIR server --url URL --scenario S --spec-version V
#
# The suite imports fs.globSync, which Node.js has from version 22; on older
# Node it runs with scripts/conformance-shim, which supplies one.
set -euo pipefail
dir=$1
shift
shim=()
if (($(node -p 'process.versions.node.split(".")[0]') < 22)); then
	shim=(--import "$(cd "$(dirname "$0")" && pwd)/conformance-shim/register.mjs")
fi
exec node "${shim[@]}" "$dir/node_modules/.bin/conformance" "$@"
