// Runs bench/replay-main.ts (TypeScript, it reuses the test fixtures).
// Usage: node bench/replay.mjs [runs per case]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('replay', process.argv.slice(2));
