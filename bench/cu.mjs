// Runs bench/cu-main.ts (TypeScript, it reuses the test fixtures).
// Usage: node bench/cu.mjs [steps per run] [runs per case]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('cu', process.argv.slice(2));
