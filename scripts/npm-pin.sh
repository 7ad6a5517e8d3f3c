# npm_pin NAME PKG VERSION DIR BIN: installs the npm package PKG at
# VERSION into DIR (npm --prefix), so that DIR/node_modules/.bin/BIN is
# its command; sourced by scripts/install-mcp-*.sh, whose NAME prefixes
# the messages. Idempotent (nothing is done or said when that version is
# there) and one install at a time per DIR (concurrent npm installs into
# one folder corrupt it). Needs Node.js (20 or later) and npm.
npm_pin() {
	local name=$1 pkg=$2 version=$3 dir=$4
	local bin=$dir/node_modules/.bin/$5 manifest=$dir/node_modules/$2/package.json
	mkdir -p "$(dirname "$dir")"
	exec 9>"$dir.lock"
	flock 9
	installed() {
		[[ -x $bin && -f $manifest ]] || return 1
		node -p 'require(process.argv[1]).version' "$manifest" 2>/dev/null
	}
	if [[ $(installed || true) == "$version" ]]; then
		return 0
	fi
	for tool in node npm; do
		if ! command -v "$tool" >/dev/null; then
			echo "$name: $tool is not on PATH: install Node.js (20 or later) and npm" >&2
			return 1
		fi
	done
	mkdir -p "$dir"
	echo "$name: npm install $pkg@$version into $dir"
	npm install --prefix "$dir" --no-audit --no-fund --save-exact --loglevel=error "$pkg@$version"
	if [[ $(installed || true) != "$version" ]]; then
		echo "$name: npm install left no $bin at version $version" >&2
		return 1
	fi
	echo "$name: installed $bin"
}
