// The loaded pass (issue 34 item 2): the timing-sensitive test files run while CPU hogs (3x the cores)
// keep the machine busy, as a user's machine is. A test that passes only on an idle machine waits on a
// duration somewhere; the fix is in the design (events carry their own time, waits on conditions), never
// a longer timeout.
//   npm run test:loaded [-- --hogs N] [-- <more vitest args>]
// Prints how long the pass took, each failed test with why, and a closing line `loaded pass: N passed,
// N failed, N skipped`; exits with vitest's status. The hogs are threads of this process, so they end
// with it (even on kill -9), and at once on SIGINT/SIGTERM. With RUNBOARD_BUNDLED=1 (scripts/test.sh,
// after the suite built them) the bundles in dist/ are used as they are.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/** The timing-sensitive files, in one list (docs/soak.md "The loaded pass" says why each is here). */
export const LOADED_FILES = [
  'tests/desktop/desktop.integration.test.ts', // desktop: focus, typing through X keymaps
  'tests/desktop/recorder.integration.test.ts', // recorder: input capture and its clock under load
  'tests/cu/replay.integration.test.ts', // replay: waits on the app's state after each step
  'tests/e2e/board.integration.test.ts', // board e2e: watchers, Chromium, serve + supervisor
  'tests/board/scheduler.integration.test.ts', // board: queued cards (re)launching, caps
  'tests/integration/containment.integration.test.ts', // containment: kills, limits, cleanup
];

const root = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
let hogs = 3 * os.availableParallelism();
const at = args.indexOf('--hogs');
if (at >= 0) {
  hogs = Number(args[at + 1]);
  if (!Number.isInteger(hogs) || hogs < 0) {
    console.error(
      `--hogs takes a whole number of CPU hogs (default: 3 x the cores = ${3 * os.availableParallelism()})`,
    );
    process.exit(2);
  }
  args.splice(at, 2);
}

// The bundles first, before the hogs: the pass loads the tests, not the build (vitest's global setup
// then skips it, RUNBOARD_BUNDLED). Not again when the caller built them (the suite just did).
if (process.env.RUNBOARD_BUNDLED === '1') console.log('== loaded pass: the bundles in dist/ as built');
else execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });

// Each hog spins for ever; a worker thread dies with this process, so no hog outlives the pass.
const threads = Array.from({ length: hogs }, () => new Worker('for (;;) {}', { eval: true }));
const started = Date.now();
const load = () => os.loadavg()[0].toFixed(1);
console.log(
  `== loaded pass: ${LOADED_FILES.length} files with ${hogs} CPU hogs on ${os.availableParallelism()} cores (load average ${load()} before the hogs)`,
);

mkdirSync(path.join(root, 'test-results'), { recursive: true });
const json = path.join(root, 'test-results', 'vitest-loaded.json');
const vitest = spawn(
  'npx',
  [
    'vitest',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${json}`,
    ...LOADED_FILES,
    ...args,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, RUNBOARD_LOADED_PASS: '1', RUNBOARD_BUNDLED: '1' } },
);
// A stopped pass (CI cancelled, its time limit) stops its hogs at once, not when vitest has ended.
const stopHogs = () => Promise.all(threads.map((t) => t.terminate()));
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    void stopHogs();
    vitest.kill(sig);
  });
let code = await new Promise((resolve) => vitest.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
await stopHogs();
const secs = Math.round((Date.now() - started) / 1000);
let summary = 'no results (vitest did not write its JSON report)';
try {
  const r = JSON.parse(readFileSync(json, 'utf8'));
  summary = `${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`;
  if (r.numTotalTests === 0) {
    summary += ' (no test ran: the pass fails)';
    code = code || 1;
  }
  // Where the time went: each file, and its slowest tests (the figures docs/soak.md keeps).
  const failed = [];
  for (const f of r.testResults) {
    for (const t of f.assertionResults)
      if (t.status === 'failed')
        failed.push({ file: path.relative(root, f.name), test: t, why: t.failureMessages });
    if (f.status === 'failed' && f.assertionResults.every((t) => t.status !== 'failed'))
      failed.push({
        file: path.relative(root, f.name),
        why: [f.message || 'the file failed outside its tests'],
      });
    const tests = [...f.assertionResults].sort((a, b) => (b.duration ?? 0) - (a.duration ?? 0));
    console.log(
      `  ${Math.round((f.endTime - f.startTime) / 1000)} s ${path.relative(root, f.name)}: ` +
        tests
          .slice(0, 3)
          .map((t) => `${((t.duration ?? 0) / 1000).toFixed(1)} s ${t.title.slice(0, 50)}`)
          .join('; '),
    );
  }
  // Each failure once more at the end, where a CI log's tail shows it: which test, and why.
  for (const { file, test, why } of failed) {
    const first =
      (why ?? [])
        .join('\n')
        .split('\n')
        .find((l) => l.trim() !== '') ?? '(no message)';
    console.log(`FAILED (loaded) ${file}${test ? ` > ${test.fullName ?? test.title}` : ''}: ${first.trim()}`);
  }
} catch {
  // vitest stopped before its report; its own output says why
}
console.log(`loaded pass: ${summary} in ${secs} s (load average ${load()} at the end)`);
process.exit(code);
