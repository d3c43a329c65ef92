// Runs bench/recorder-load-main.ts (TypeScript, it reuses the desktop test session).
// Usage: node bench/recorder-load.mjs [runs per case] [hogs per core, e.g. 0,2,4,8]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('recorder-load', process.argv.slice(2));
