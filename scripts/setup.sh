#!/usr/bin/env bash
# Sets up everything Runboard needs on a fresh Debian machine, idempotently and quickly when nothing
# changed: Debian packages, npm dependencies (which build the native addon), and the JS bundles.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1msetup:\033[0m %s\n' "$*" >&2; }

# 1. Debian packages (only the missing ones; apt-get update only when something is missing).
mapfile -t wanted < <(grep -v '^\s*#' scripts/apt-packages.txt | sed '/^\s*$/d')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. npm dependencies (npm ci also builds native/ through its install script).
nstamp=native/build/.runboard-stamp
nwant=$(cat native/binding.gyp $(find native/src -name '*.cc' -o -name '*.h' | sort) | sha256sum | cut -c1-16)
stamp=node_modules/.runboard-stamp
want=$(cat package-lock.json */package.json packages/*/package.json package.json | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing npm dependencies"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
  echo "$nwant" > "$nstamp" # npm ci has just built it
fi

# 3. Native addon: rebuild when its sources changed since the last build.
if [ ! -f "$nstamp" ] || [ "$(cat "$nstamp")" != "$nwant" ]; then
  log "building the native addon"
  node native/scripts/build.mjs >/dev/null
  echo "$nwant" > "$nstamp"
fi

# 4. JS bundles (esbuild; a fraction of a second).
node scripts/bundle.mjs
