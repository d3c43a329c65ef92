// read_document and export_document on real files made in the test (fixtures.ts), and the round trip
// Markdown → DOCX → Markdown.
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportDocument } from '../../worker/src/tools/documents/export.ts';
import { readDocument } from '../../worker/src/tools/documents/read.ts';
import { docx, imagePdf, png, textPdf, xlsx } from './fixtures.ts';

let ws: string;
let outside: string;

beforeAll(async () => {
  ws = mkdtempSync(path.join(tmpdir(), 'rb-docs-ws-'));
  outside = mkdtempSync(path.join(tmpdir(), 'rb-docs-out-'));
  await Promise.all([
    textPdf(path.join(ws, 'report.pdf')),
    imagePdf(path.join(ws, 'scan.pdf')),
    docx(path.join(ws, 'form.docx')),
    docx(path.join(ws, 'plain.docx'), { headerRow: false }),
    xlsx(path.join(ws, 'book.xlsx')),
  ]);
  writeFileSync(path.join(ws, 'notes.md'), '# Notes\n\nplain *markdown*\n');
  writeFileSync(path.join(outside, 'secret.txt'), 'not yours');
}, 60_000);

afterAll(() => {
  rmSync(ws, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

describe('read_document', () => {
  it('reads a text PDF, page by page', async () => {
    const r = await readDocument(ws, 'report.pdf');
    expect(r.metadata).toMatchObject({ format: 'pdf', pages: 2, truncated: false, path: 'report.pdf' });
    expect(r.markdown).toContain('Annual report');
    expect(r.markdown).toContain('Totals: 4711');
    expect(r.markdown).toContain('<!-- page 2 -->');
  });

  it('refuses a PDF with no text (a scan) with the clear error', async () => {
    await expect(readDocument(ws, 'scan.pdf')).rejects.toThrow(
      'Unsupported PDF: no extractable text (scanned PDF not supported).',
    );
  });

  it('reads a DOCX with headings, lists and tables as Markdown', async () => {
    const { markdown, metadata } = await readDocument(ws, 'form.docx');
    expect(metadata.format).toBe('docx');
    expect(markdown).toMatch(/^# Form data$/m);
    expect(markdown).toMatch(/^## Steps$/m);
    expect(markdown).toContain('**Ada Lovelace**');
    expect(markdown).toMatch(/^1\.\s+Open the form$/m);
    expect(markdown).toMatch(/^2\.\s+Type the name$/m);
    expect(markdown).toMatch(/^-\s+a bullet point$/m);
    expect(markdown).toMatch(/^\|\s*Field\s*\|\s*Value\s*\|$/m);
    expect(markdown).toMatch(/^\|\s*City\s*\|\s*London\s*\|$/m);
  });

  it('an ordinary Word table (no repeat-header mark) reads with its first row as the header', async () => {
    const { markdown } = await readDocument(ws, 'plain.docx');
    const table = markdown.slice(markdown.indexOf('|')).split('\n');
    expect(table.map((l) => l.replace(/\s+/g, ' '))).toEqual([
      '| Field | Value |',
      '| --- | --- |',
      '| City | London |',
      '| Year | 1843 |',
    ]);
  });

  it('reads the first sheet of an XLSX by default, a named sheet on request', async () => {
    const first = await readDocument(ws, 'book.xlsx');
    expect(first.metadata).toMatchObject({ format: 'xlsx', sheet: 'Summary', sheets: ['Summary', 'Sheet2'] });
    expect(first.markdown.split('\n').slice(0, 3)).toEqual([
      '| Region | Revenue | Note |',
      '| --- | --- | --- |',
      '| R1 | 1000 | first \\| piped |',
    ]);
    const second = await readDocument(ws, 'book.xlsx', { sheet: 'Sheet2' });
    expect(second.metadata.sheet).toBe('Sheet2');
    expect(second.markdown).toContain('| Grace | grace@example.org |');
    await expect(readDocument(ws, 'book.xlsx', { sheet: 'Nope' })).rejects.toThrow(
      'no sheet named "Nope"; the workbook\'s sheets are: "Summary", "Sheet2"',
    );
  });

  it('reads Markdown and plain text as they are', async () => {
    const r = await readDocument(ws, 'notes.md');
    expect(r).toEqual({
      markdown: '# Notes\n\nplain *markdown*\n',
      metadata: { path: 'notes.md', format: 'markdown', bytes: 26, chars: 26, truncated: false },
    });
  });

  it('truncates at max_chars and says so', async () => {
    const full = await readDocument(ws, 'report.pdf');
    const r = await readDocument(ws, 'report.pdf', { maxChars: 20 });
    expect(r.metadata).toMatchObject({ truncated: true, chars: full.metadata.chars });
    expect(r.markdown.startsWith(full.markdown.slice(0, 20) + '\n\n[truncated')).toBe(true);
    expect(r.markdown).toContain(`[truncated: showing 20 of ${r.metadata.chars} characters;`);
  });

  it('refuses paths outside the workspace, through .. and through a symlink', async () => {
    const msg = /is outside the workspace .*the document tools read and write only files inside it/;
    await expect(readDocument(ws, path.join(outside, 'secret.txt'))).rejects.toThrow(msg);
    await expect(readDocument(ws, '../' + path.basename(outside) + '/secret.txt')).rejects.toThrow(msg);
    symlinkSync(outside, path.join(ws, 'link'));
    await expect(readDocument(ws, 'link/secret.txt')).rejects.toThrow(msg);
    await expect(exportDocument(ws, 'notes.md', path.join(outside, 'x.docx'), 'docx')).rejects.toThrow(msg);
    await expect(exportDocument(ws, 'notes.md', 'link/x.docx', 'docx')).rejects.toThrow(msg);
  });

  it('says what is wrong with a missing file or an unsupported format', async () => {
    await expect(readDocument(ws, 'nope.pdf')).rejects.toThrow('nope.pdf: no such file in the workspace');
    writeFileSync(path.join(ws, 'x.bin'), 'x');
    await expect(readDocument(ws, 'x.bin')).rejects.toThrow(
      'unsupported format ".bin"; read_document reads PDF',
    );
  });
});

const ROUND_TRIP = `# Quarterly report

Intro with **bold**, *italic* and \`code\`.

## Findings

- first finding
- second finding
  - a nested detail

1. step one
2. step two

| Region | Revenue |
| --- | ---: |
| North | 1200 |
| South | 800 |

### Closing

The end.
`;

describe('export_document', () => {
  it('round trip Markdown → DOCX → Markdown keeps headings, lists and tables', async () => {
    writeFileSync(path.join(ws, 'rt.md'), ROUND_TRIP);
    const r = await exportDocument(ws, 'rt.md', 'out/rt.docx', 'docx');
    expect(r).toMatchObject({ path: 'out/rt.docx', format: 'docx' });
    const { markdown } = await readDocument(ws, 'out/rt.docx');
    for (const h of ['# Quarterly report', '## Findings', '### Closing'])
      expect(markdown).toMatch(new RegExp(`^${h}$`, 'm'));
    expect(markdown).toContain('**bold**');
    expect(markdown).toContain('_italic_');
    expect(markdown).toContain('`code`');
    expect(markdown).toMatch(/^-\s+first finding$/m);
    expect(markdown).toMatch(/^-\s+second finding$/m);
    expect(markdown).toMatch(/^\s+-\s+a nested detail$/m);
    expect(markdown).toMatch(/^1\.\s+step one$/m);
    expect(markdown).toMatch(/^2\.\s+step two$/m);
    expect(markdown).toMatch(/^\|\s*Region\s*\|\s*Revenue\s*\|$/m);
    expect(markdown).toMatch(/^\|\s*North\s*\|\s*1200\s*\|$/m);
  });

  it('prints CJK text with real glyphs, not empty boxes (a CJK font is installed by setup)', async () => {
    // Two pages of different characters: with no font for them both print the same .notdef boxes.
    const pages: Buffer[] = [];
    for (const [name, text] of [
      ['tokyo', '東京'],
      ['osaka', '大阪'],
    ] as const) {
      writeFileSync(path.join(ws, `${name}.md`), `# ${text}\n`);
      await exportDocument(ws, `${name}.md`, `${name}.pdf`, 'pdf');
      // pdftotext (poppler-utils) finds the text; pdftoppm renders the page as a person sees it
      expect(execFileSync('pdftotext', [path.join(ws, `${name}.pdf`), '-']).toString()).toContain(text);
      execFileSync('pdftoppm', [
        '-png',
        '-r',
        '40',
        '-f',
        '1',
        '-l',
        '1',
        '-singlefile',
        path.join(ws, `${name}.pdf`),
        path.join(ws, name),
      ]);
      pages.push(readFileSync(path.join(ws, `${name}.png`)));
    }
    expect(pages[0]!.equals(pages[1]!), '東京 and 大阪 rendered alike: boxes, no CJK font').toBe(false);
  });

  it('prints a PDF with Chromium that read_document reads back; the workspace style wins over the project', async () => {
    const project = mkdtempSync(path.join(tmpdir(), 'rb-docs-proj-'));
    try {
      writeFileSync(path.join(ws, 'rep.md'), ROUND_TRIP);
      const builtin = await exportDocument(ws, 'rep.md', undefined, 'pdf', { project });
      expect(builtin).toMatchObject({
        path: 'rep.pdf',
        format: 'pdf',
        pages: 1,
        style: 'built-in',
        warnings: [],
      });
      const back = await readDocument(ws, 'rep.pdf');
      expect(back.markdown).toContain('Quarterly report');
      expect(back.markdown).toContain('second finding');

      writeFileSync(path.join(project, 'pdf_style.css'), 'h1 { color: red }');
      expect((await exportDocument(ws, 'rep.md', 'p.pdf', undefined, { project })).style).toBe(
        path.join(project, 'pdf_style.css'),
      );
      mkdirSync(path.join(ws, 'pdf_style.css')); // a directory: not a style, the project's applies
      expect((await exportDocument(ws, 'rep.md', 'p.pdf', 'pdf', { project })).style).toBe(
        path.join(project, 'pdf_style.css'),
      );
      rmSync(path.join(ws, 'pdf_style.css'), { recursive: true });
      writeFileSync(path.join(ws, 'pdf_style.css'), 'h1 { display: none }');
      const small = await exportDocument(ws, 'rep.md', 'p.pdf', 'pdf', { project });
      expect(small.style).toBe(path.join(realpathSync(ws), 'pdf_style.css'));
      // The workspace's style hides the title: it is not printed.
      const styled = await readDocument(ws, 'p.pdf');
      expect(styled.markdown).not.toContain('Quarterly report');
      expect(styled.markdown).toContain('second finding');
      const doc = await getDocumentProxy(new Uint8Array(readFileSync(path.join(ws, 'p.pdf'))));
      expect((await doc.getPage(1)).view.map(Math.round)).toEqual([0, 0, 596, 843]); // A4 (595.3 × 841.9 pt, rounded by Chromium)
      expect(readFileSync(path.join(ws, 'p.pdf')).subarray(0, 5).toString()).toBe('%PDF-');
    } finally {
      rmSync(project, { recursive: true, force: true });
      rmSync(path.join(ws, 'pdf_style.css'), { force: true });
    }
  }, 60_000);

  it('embeds data: images in a PDF but never a local file or URL from outside the workspace', async () => {
    const image = await png();
    writeFileSync(path.join(outside, 'private.png'), image);
    const dataUrl = `data:image/png;base64,${image.toString('base64')}`;
    const hasImage = (f: string) =>
      readFileSync(path.join(ws, f)).toString('latin1').includes('/Subtype /Image');
    writeFileSync(path.join(ws, 'img.md'), `# Pictures\n\n![](${dataUrl})\n`);
    await exportDocument(ws, 'img.md', 'inline.pdf', 'pdf');
    expect(hasImage('inline.pdf')).toBe(true); // the probe sees an embedded image
    writeFileSync(
      path.join(ws, 'leak.md'),
      `# Pictures\n\n![](file://${path.join(outside, 'private.png')})\n`,
    );
    await exportDocument(ws, 'leak.md', 'leak.pdf', 'pdf');
    expect(hasImage('leak.pdf')).toBe(false);
  }, 60_000);

  it('says what is wrong with a bad format or output name', async () => {
    await expect(exportDocument(ws, 'notes.md', 'x.odt', undefined)).rejects.toThrow(
      'format must be "pdf" or "docx", got "odt"',
    );
    await expect(exportDocument(ws, 'notes.md', 'x.pdf', 'docx')).rejects.toThrow('does not end in .docx');
    await expect(exportDocument(ws, 'report.pdf', 'x.docx', 'docx')).rejects.toThrow(
      'converts a Markdown file',
    );
  });
});
