// A computer-use step through the model proxy, this build against a baseline build, alternated in one
// process: node bench/cu-ab.mjs --baseline DIR [--blocks 8] [--steps 30] (head of bench/cu-ab-main.ts).
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('cu-ab', process.argv.slice(2));
