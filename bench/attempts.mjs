// Runs bench/attempts-main.ts (TypeScript, it reuses the test fixtures): a card as 1, 2 and 4 attempts.
// Usage: node bench/attempts.mjs [steps per attempt] [rounds] [--copy MiB: a folder that is not git, copied per attempt]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('attempts', process.argv.slice(2));
