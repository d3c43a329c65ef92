// Runs bench/extract-main.ts (TypeScript, it reuses the test fixtures).
// Usage: node bench/extract.mjs [seconds of video, default 60]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('extract', process.argv.slice(2));
