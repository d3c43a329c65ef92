#!/usr/bin/env bash
# Sets everything up and opens the Runboard board on the bundled project/ (or $RUNBOARD_PROJECT).
# Electron where it can run (an `electron` binary and a display); otherwise the headless host,
# `runboard serve`, which prints the URL to open in a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
project=${RUNBOARD_PROJECT:-project}
# The demo workspace is granted once (a grant is the user's choice of folder; this is that choice).
if [ -d "$project/workspace" ]; then node dist/runboard.mjs grant "$project/workspace" >/dev/null; fi
electron_bin=$(node -e "try{const p=require('electron');if(typeof p==='string'&&require('fs').existsSync(p))console.log(p)}catch{}" 2>/dev/null || true)
if [ -n "$electron_bin" ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -f dist/electron-main.mjs ]; then
  echo "Runboard: opening the board of $project/ in Electron."
  exec "$electron_bin" dist/electron-main.mjs --project "$project"
fi
echo "Runboard: Electron cannot run here (no Electron binary or no display), so the board is served"
echo "to your browser instead. Open the URL below; Ctrl-C stops the board (runs go on)."
echo
exec node dist/runboard.mjs serve --project "$project" ${RUNBOARD_PORT:+--port "$RUNBOARD_PORT"}
