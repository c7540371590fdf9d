#!/usr/bin/env bash
# npm test's set-up, run first by the test script (a pretest script would never run: .npmrc's
# ignore-scripts=true skips pre- and post-scripts too): the README promises that `npm ci && npm test` prepares
# everything, so the system programs some tests run are installed here, from Debian's apt, when one
# is missing and this runs as root with apt-get: nginx and haproxy (the shipped router configs), python3-requests
# (examples/invoke.py), curl (examples/invoke.sh). Anywhere else nothing is installed and the tests
# that need it skip with a reason id, which fails the run unless MME_ALLOW_SKIP names it
# (test/helpers/skip.ts). kubectl, podman and the base image are not installed here: kubectl is not in
# Debian 12, and podman with its base image is CI's to prepare (.ci/run, from ../shared).
set -euo pipefail
missing=()
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || missing+=(nginx)
[ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null || missing+=(haproxy)
python3 -c 'import requests' 2>/dev/null || missing+=(python3-requests)
command -v curl >/dev/null || missing+=(curl)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "test set-up: ${missing[*]} missing; not root with apt-get, so the tests that need them will skip (and fail the run unless MME_ALLOW_SKIP allows them)" >&2
  exit 0
fi
echo "test set-up: apt-get install ${missing[*]}" >&2
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
# A fresh machine may have no package lists yet.
install || { apt-get update -qq && install; }
