#!/usr/bin/env bash
# Makes a git worktree of main for parallel work: `bash scripts/worktree.sh NAME [DIR]` (default DIR:
# ../wt-NAME) on a new branch NAME, with node_modules entries linked to this checkout's (but @runboard/*,
# which point at the worktree's own packages), a copy of native/build and fresh dist/ bundles.
# After main gains a dependency: `npm install` here, then run this script's linking step again
# (`bash scripts/worktree.sh --relink DIR`); after main's native/ changed: `node native/scripts/build.mjs`
# in the worktree.
set -euo pipefail
main=$(cd "$(dirname "$0")/.." && pwd)
link() {
  local wt=$1
  mkdir -p "$wt/node_modules/@runboard"
  for e in "$main"/node_modules/* "$main"/node_modules/.bin; do
    local b
    b=$(basename "$e")
    [ "$b" = "@runboard" ] || [ -e "$wt/node_modules/$b" ] || ln -s "$e" "$wt/node_modules/$b"
  done
  for p in host native supervisor tests worker; do
    [ -e "$wt/node_modules/@runboard/$p" ] || ln -s "../../$p" "$wt/node_modules/@runboard/$p"
  done
  for p in project; do
    [ -e "$wt/node_modules/@runboard/$p" ] || ln -s "../../packages/$p" "$wt/node_modules/@runboard/$p"
  done
}
if [ "${1:-}" = --relink ]; then
  link "$(cd "$2" && pwd)"
  exit 0
fi
name=${1:?usage: worktree.sh NAME [DIR] | --relink DIR}
wt=${2:-$main/../wt-$name}
git -C "$main" worktree add -q -b "$name" "$wt" main
wt=$(cd "$wt" && pwd)
link "$wt"
cp -a "$main/native/build" "$wt/native/build"
(cd "$wt" && node scripts/bundle.mjs >/dev/null)
echo "$wt"
