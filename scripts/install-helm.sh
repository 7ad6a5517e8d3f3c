#!/usr/bin/env bash
# Installs the pinned Helm that deployments/helm_test.go runs (helm lint,
# helm template) into the machine's shared tool cache, outside the clone:
#   ${TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/tools}/helm-<version>/helm
# so it is built once per machine (13-15 min on two cold cores) and every
# clone reuses it; the directory is keyed by version, so bumping the
# version builds the new one. TOOLS_CACHE overrides the cache directory
# (deployments/helm_test.go reads the same variable); `make` exports it.
# Debian (bookworm, trixie) packages no helm, so it is built from its Go
# module (helm.sh/helm/v3) through the Go module proxy: a pinned version
# (the go command checks its modules against the checksum database),
# nothing added to the project's go.mod. The version string is set as
# Helm's own Makefile sets it. The build goes to a temporary directory
# first and is moved into place, so an interrupted build leaves no
# half-written binary that a concurrent clone could run.
# Idempotent: does (and says) nothing when the pinned version is there.
#
#   bash scripts/install-helm.sh
set -euo pipefail

# Keep in step with helmVersion in deployments/helm_test.go.
version=v3.22.0
cache=${TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolrouterd/tools}
dir=$cache/helm-$version
bin=$dir/helm

if [[ -x $bin ]] && [[ $("$bin" version --template '{{.Version}}' 2>/dev/null) == "$version" ]]; then
	exit 0
fi
echo "install-helm: go install helm.sh/helm/v3/cmd/helm@$version into $dir"
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.helm-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
GOBIN=$tmp go install -ldflags "-X helm.sh/helm/v3/internal/version.version=$version" "helm.sh/helm/v3/cmd/helm@$version"
mkdir -p "$dir"
mv -f "$tmp/helm" "$bin"
