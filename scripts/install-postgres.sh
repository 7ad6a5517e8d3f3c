#!/usr/bin/env bash
# Installs the PostgreSQL server binaries that the store tests start
# (internal/store/pgtest looks for /usr/lib/postgresql/*/bin/{initdb,postgres}).
# Debian/Ubuntu only. Idempotent: does (and says) nothing when a server is
# installed.
# The package's system service is NOT started: the tests run their own
# throwaway server as an unprivileged user on a free port.
#
#   bash scripts/install-postgres.sh
set -euo pipefail
shopt -s nullglob

pg_root=${PG_ROOT:-/usr/lib/postgresql}

installed() {
	local bin
	for bin in "$pg_root"/*/bin/postgres; do
		if [[ -x $bin && -x ${bin%/postgres}/initdb ]]; then
			echo "$bin"
			return 0
		fi
	done
	return 1
}

if installed >/dev/null; then
	exit 0
fi

if ! command -v apt-get >/dev/null; then
	echo "install-postgres: no apt-get here: install the PostgreSQL server (initdb, postgres) yourself" >&2
	exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "install-postgres: run as root (or install sudo)" >&2
		exit 1
	fi
	sudo=(sudo)
fi

# Keep the package scripts from starting the system service: invoke-rc.d
# asks policy-rc.d, and 101 means "action forbidden". An existing policy
# (container images often ship one) is left alone.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	"${sudo[@]}" sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 0755 $policy"
	trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-postgres: apt-get update"
"${sudo[@]}" apt-get update -qq
echo "install-postgres: apt-get install postgresql"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null

# Where a service manager started it anyway, stop it: nothing needs it.
if command -v pg_lsclusters >/dev/null; then
	pg_lsclusters --no-header 2>/dev/null | while read -r version cluster _port status _; do
		if [[ $status == online* ]]; then
			"${sudo[@]}" pg_ctlcluster "$version" "$cluster" stop || true
		fi
	done
fi

if bin=$(installed); then
	echo "install-postgres: installed $bin"
else
	echo "install-postgres: apt-get install postgresql left no $pg_root/*/bin/postgres" >&2
	exit 1
fi
