import { defineConfig } from 'vitest/config';

// Three projects, run in this order: unit tests beside the code (fast, no processes); integration tests
// in tests/ (real processes, sockets, files, browsers; two files at a time); and the desktop tests, one
// file at a time, last: they type through X keymaps and time GUI reactions, which heavy neighbours
// (Chromium, private displays) on a 2-core machine can starve.
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
          sequence: { groupOrder: 2 },
          include: ['tests/desktop/**/*.integration.test.ts'],
          fileParallelism: false,
          maxWorkers: 1,
        },
      },
    ],
  },
});
