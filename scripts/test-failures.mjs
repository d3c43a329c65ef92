// Prints the failed tests of a vitest JSON report, each with the first lines of why, and a closing
// line. scripts/test.sh calls it last, so the end of a CI log (all that CI keeps) names the failures
// of the whole suite, not only those of the loaded pass that ran after it.
// Given the suite's printed output too, it repeats vitest's "Unhandled Errors" section: errors caught
// outside any test fail the run while every test passed (the JSON report holds no trace of them).
//   node scripts/test-failures.mjs test-results/vitest.json [test-results/vitest.log]
import { readFileSync } from 'node:fs';
import path from 'node:path';

const file = process.argv[2] ?? 'test-results/vitest.json';
const log = process.argv[3];
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`== suite failures: no report at ${file} (${err.message})`);
  process.exit(0);
}
const failed = [];
for (const suite of report.testResults ?? []) {
  const rel = path.relative(process.cwd(), suite.name);
  const tests = (suite.assertionResults ?? []).filter((t) => t.status === 'failed');
  // A file that failed to load (or whose hooks failed) has a message and no failed test.
  if (tests.length === 0 && suite.status === 'failed') failed.push({ where: rel, why: suite.message ?? '' });
  for (const t of tests)
    failed.push({ where: `${rel} > ${t.fullName}`, why: (t.failureMessages ?? []).join('\n') });
}
console.log(`== suite failures: ${failed.length === 0 ? 'none' : failed.length}`);
for (const f of failed) {
  console.log(`FAILED ${f.where}`);
  const lines = f.why.split('\n').filter((l) => l.trim() !== '');
  for (const line of lines.slice(0, 12)) console.log(`    ${line}`);
}
if (log) {
  let text = '';
  try {
    // eslint-disable-next-line no-control-regex
    text = readFileSync(log, 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
  } catch {
    // no log kept: the JSON's figures stand alone
  }
  const at = text.indexOf('Unhandled Error');
  if (at >= 0) {
    const lines = text.slice(text.lastIndexOf('\n', at) + 1).split('\n');
    console.log('== errors outside any test (they fail the run):');
    for (const line of lines.slice(0, 60)) console.log(`    ${line}`);
  }
}
console.log(
  `suite: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests + report.numTodoTests} skipped`,
);
