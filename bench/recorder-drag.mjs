// Runs bench/recorder-drag-main.ts (TypeScript, it reuses the desktop test session).
// Usage: node bench/recorder-drag.mjs [runs] [places]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('recorder-drag', process.argv.slice(2));
