#!/usr/bin/env bash
# Sets everything up and starts Runboard on the bundled project/ board.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
rb() { node dist/runboard.mjs "$@"; }
project=${RUNBOARD_PROJECT:-project}
# The demo workspace is granted once (a grant is the user's choice of folder; this is that choice).
if [ -d "$project/workspace" ]; then rb grant "$project/workspace" >/dev/null; fi
echo "Runboard: running the demo cards of $project/ (the board UI arrives with 'runboard serve')."
for card in "$project"/cards/hello.md "$project"/cards/sandbox.md; do
  [ -f "$card" ] || continue
  echo; echo "── $card"
  rb run "$card" || true
done
echo; rb runs
echo; echo "Try: bin/runboard run $project/cards/count.md   (Ctrl-C cancels)   ·   bin/runboard help"
