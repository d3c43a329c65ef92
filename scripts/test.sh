#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite: lint, types, unit and integration tests, then the
# loaded pass (the timing-sensitive files again with CPU hogs at 3x the cores in this session:
# scripts/test-loaded.mjs, docs/soak.md). Given vitest arguments (a subset), it runs those only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# One command per line: under `set -e` a failure inside an `a && b && c` list does not stop the script
# (only the last command's does), so lint written that way never failed a CI run.
echo "== lint"
npx eslint .
node scripts/check-boundaries.mjs
node scripts/check-conflict-markers.mjs
npx prettier --check . --log-level warn
bash scripts/check-cpp-format.sh
# One tsconfig per environment: Node processes, the renderer (DOM, no Node), the tests.
echo "== types"
npm run -s typecheck
echo "== tests"
mkdir -p test-results
status=0
# Its output is kept in test-results/vitest.log too: errors vitest caught outside any test (an unhandled
# rejection after a test ended) fail the run with every test passed, and are named at the end from there.
npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@" 2>&1 |
  tee test-results/vitest.log || status=$?
# One plain closing line, whatever the reporter printed above.
node -e '
  const r = JSON.parse(require("fs").readFileSync("test-results/vitest.json", "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' || true
# The loaded pass after the suite, even when the suite failed (its failures say something of their own).
if [ "$#" -eq 0 ]; then
  echo "== loaded pass"
  # The suite's global setup built dist/ from these sources: the pass uses it as it is.
  RUNBOARD_BUNDLED=1 node scripts/test-loaded.mjs || status=$?
fi
# The very last lines name what failed in the suite, with why: CI keeps only the end of the output, and
# the loaded pass prints after the suite (session 15's stop failed CI with only the loaded pass visible).
node scripts/test-failures.mjs test-results/vitest.json test-results/vitest.log || true
exit "$status"
