#!/usr/bin/env bash
# Installs the pinned Helm that deployments/helm_test.go runs (helm lint,
# helm template) as bin/tools/helm. Debian (bookworm, trixie) packages no
# helm, so it is built from its Go module (helm.sh/helm/v3) through the Go
# module proxy: a pinned version (the go command checks its modules against
# the checksum database), nothing added to the project's go.mod. The version
# string is set as Helm's own Makefile sets it.
# Idempotent: does (and says) nothing when the pinned version is there.
#
#   bash scripts/install-helm.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Keep in step with helmVersion in deployments/helm_test.go.
version=v3.22.0
bin=$PWD/bin/tools/helm

if [[ -x $bin ]] && [[ $("$bin" version --template '{{.Version}}' 2>/dev/null) == "$version" ]]; then
	exit 0
fi
echo "install-helm: go install helm.sh/helm/v3/cmd/helm@$version"
GOBIN=$PWD/bin/tools go install -ldflags "-X helm.sh/helm/v3/internal/version.version=$version" "helm.sh/helm/v3/cmd/helm@$version"
