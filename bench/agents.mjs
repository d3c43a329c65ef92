// Runs bench/agents-main.ts (TypeScript, it reuses the test fixtures).
// Usage: node bench/agents.mjs [runs per case]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('agents', process.argv.slice(2));
