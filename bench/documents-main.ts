// read_document time per MB for each format, on files made here by the libraries that write them
// (tests/documents/fixtures.ts). Not a test: nothing passes or fails on time.
//   node bench/documents.mjs [--rows N] [--paragraphs N]
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { exportDocument } from '../worker/src/tools/documents/export.ts';
import { readDocument } from '../worker/src/tools/documents/read.ts';
import { textPdf, xlsx } from '../tests/documents/fixtures.ts';

const arg = (name: string, d: number): number => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};
const rows = arg('--rows', 20_000);
const paragraphs = arg('--paragraphs', 3_000);
async function main(): Promise<void> {
  const ws = mkdtempSync(path.join(tmpdir(), 'rb-bench-docs-'));
  try {
    const md = Array.from({ length: paragraphs / 10 }, (_, i) =>
      [
        `## Section ${i}`,
        '',
        'Some text with **bold** words. '.repeat(8),
        '',
        '- a',
        '- b',
        '',
        '| x | y |',
        '| --- | --- |',
        '| 1 | 2 |',
        '',
      ].join('\n'),
    ).join('\n');
    writeFileSync(path.join(ws, 'big.md'), md);
    await exportDocument(ws, 'big.md', 'big.docx', 'docx');
    await textPdf(path.join(ws, 'big.pdf'), paragraphs);
    await xlsx(path.join(ws, 'big.xlsx'), rows);
    console.log('| format | file | MB | read ms | ms per MB | Markdown chars |');
    console.log('|---|---|---|---|---|---|');
    for (const f of ['big.md', 'big.docx', 'big.pdf', 'big.xlsx']) {
      const mb = statSync(path.join(ws, f)).size / 1e6;
      await readDocument(ws, f, { maxChars: 1e9 }); // warm: module loading is not reading
      const t0 = performance.now();
      const r = await readDocument(ws, f, { maxChars: 1e9 });
      const ms = performance.now() - t0;
      console.log(
        `| ${r.metadata.format} | ${f} | ${mb.toFixed(2)} | ${ms.toFixed(0)} | ${(ms / mb).toFixed(0)} | ${r.metadata.chars} |`,
      );
    }
    const t0 = performance.now();
    const e = await exportDocument(ws, 'big.md', 'out.pdf', 'pdf');
    const ms = performance.now() - t0;
    console.log(
      `\nexport PDF: ${e.pages} pages in ${ms.toFixed(0)} ms (${(ms / (e.pages ?? 1)).toFixed(0)} ms per page, Chromium start included)`,
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
}

void main();
