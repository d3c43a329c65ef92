import { defineConfig } from 'vitest/config';

// Three projects, run in this order: unit tests beside the code (fast, no processes); integration tests
// in tests/ (real processes, sockets, files, browsers; two files at a time); and the desktop tests, one
// file at a time, last: they type through X keymaps and time GUI reactions, which heavy neighbours
// (Chromium, private displays) on a 2-core machine can starve. In the loaded pass
// (scripts/test-loaded.mjs sets RUNBOARD_LOADED_PASS) starving is the point: the desktop files run beside
// the integration files, not after them (docs/decisions.md).
const loadedPass = process.env.RUNBOARD_LOADED_PASS === '1';
const integration = {
  globalSetup: ['tests/helpers/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          setupFiles: ['tests/helpers/unit-home.ts'],
          include: ['{host,supervisor,worker,native,packages/project}/src/**/*.test.ts'],
        },
      },
      {
        test: {
          ...integration,
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['tests/**/*.integration.test.ts'],
          exclude: ['tests/desktop/**'],
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
      {
        test: {
          ...integration,
          name: 'desktop',
          include: ['tests/desktop/**/*.integration.test.ts'],
          // each file has a desktop (X server) of its own; vitest runs one group with one worker count
          ...(loadedPass
            ? { sequence: { groupOrder: 1 }, fileParallelism: true, maxWorkers: 2 }
            : { sequence: { groupOrder: 2 }, fileParallelism: false, maxWorkers: 1 }),
        },
      },
    ],
  },
});
