import { defineConfig } from 'vitest/config';

// Two projects: unit tests beside the code (fast, no processes) and integration tests in tests/
// (real processes, sockets, files; they need `npm run build` first, which the test script does).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{host,supervisor,worker,native}/src/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 }, // after the unit tests
          include: ['tests/**/*.integration.test.ts'],
          globalSetup: ['tests/helpers/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          pool: 'forks',
          fileParallelism: true,
          maxWorkers: 2,
        },
      },
    ],
  },
});
