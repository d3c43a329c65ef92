// The model proxy's per-request overhead of usage accounting, with and without, alternated in one
// process: node bench/proxy-usage.mjs [--blocks 8] [--requests 200] (head of bench/proxy-usage-main.ts).
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('proxy-usage', process.argv.slice(2));
