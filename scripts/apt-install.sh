#!/usr/bin/env bash
# Installs Debian/Ubuntu packages that are not installed yet, as root or through
# sudo, without letting apt start the services they ship: scripts/services.sh
# runs its own servers from a data folder of the repository's, on ports it
# chooses, so a distribution default (PostgreSQL's cluster "main", redis-server
# on 6379, ...) must not start and take them.
#
#   bash scripts/apt-install.sh PACKAGE...
#
# Does nothing when every package is installed. `apt-get update` runs only when
# the package lists are empty or the first install fails.
set -euo pipefail

missing=()
for pkg in "$@"; do
  if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ]; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "apt-install: no apt-get here; install ${missing[*]} (or their equivalents) yourself" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "apt-install: installing ${missing[*]} needs root or sudo" >&2
  exit 1
fi

# invoke-rc.d and deb-systemd-invoke ask policy-rc.d whether a package may start its service; 101 says no.
# An existing policy (a container image's own) is left as it is.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  "${as_root[@]}" sh -c "printf '#!/bin/sh\n# scripts/apt-install.sh: no service starts while it installs\nexit 101\n' >$policy && chmod 755 $policy"
  trap '"${as_root[@]}" rm -f "$policy"' EXIT
fi

apt_get() {
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@"
}
install() {
  apt_get install -y -qq \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" >/dev/null
}

echo "apt-install: installing ${missing[*]}" >&2
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
  apt_get update -qq >/dev/null
fi
if ! install; then
  echo "apt-install: install failed; updating the package lists and trying again" >&2
  apt_get update -qq >/dev/null
  install
fi
