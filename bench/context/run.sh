#!/usr/bin/env bash
# make bench-context: installs the Anthropic tokenizer (pinned) when
# missing, then runs the bench (bench/context/main.go).
set -euo pipefail
version=0.0.4
pkg=@anthropic-ai/tokenizer
dir=${ANTHROPIC_TOKENIZER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/anthropic-tokenizer}
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
manifest=$dir/node_modules/$pkg/package.json
if [[ $(node -p 'require(process.argv[1]).version' "$manifest" 2>/dev/null || true) != "$version" ]]; then
	mkdir -p "$dir"
	echo "bench-context: npm install $pkg@$version into $dir" >&2
	npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error "$pkg@$version" >&2
fi
exec 9>&-
cd "$(dirname "$0")/../.."
exec ${GO:-go} run ./bench/context -tokenizer-dir "$dir" "$@"
