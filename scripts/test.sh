#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite: lint, types, unit and integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== lint" && npx eslint . && npx prettier --check . >/dev/null
echo "== types" && npx tsc -p tsconfig.json --noEmit
echo "== tests" && npx vitest run "$@"
