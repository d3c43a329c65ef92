// Runs bench/documents-main.ts (TypeScript, it reuses the test fixtures): read_document time per MB
// for each format, and PDF export time per page.
// Usage: node bench/documents.mjs [--rows N] [--paragraphs N]
import { runFixtureBench } from './fixture-bench.mjs';

await runFixtureBench('documents', process.argv.slice(2));
