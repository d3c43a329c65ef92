// Real documents made by the libraries that write them: DOCX by `docx`, XLSX by exceljs, PDFs printed
// by Debian's Chromium (one with text, one of an image only, as a scanner makes), a PNG by ffmpeg.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import * as D from 'docx';
import ExcelJS from 'exceljs';
import { CHROMIUM_ARGS } from '../e2e/helpers/board.ts';

export async function printPdf(html: string, file: string): Promise<void> {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
  });
  try {
    const page = await browser.newPage();
    await page.setContent(html);
    writeFileSync(file, await page.pdf({ format: 'A4', printBackground: true }));
  } finally {
    await browser.close();
  }
}

/**
 * A small PNG written by ffmpeg's PNG encoder from one of its sources (default 40 × 30, all #cc3333;
 * `gradients=s=64x48` for one of ~1.5 KB that does not compress away). Not a Chromium screenshot:
 * DevTools' `Page.captureScreenshot` copies the page's compositor surface and answers "Unable to
 * capture screenshot" when that copy comes back empty (Chromium tries it again 5 times at once, never
 * a frame later; Playwright's clip resizes the view just before it). The computer-use tests' beforeAll
 * failed so once in CI: a fixture has no reason to depend on a compositor.
 */
export async function png(source = 'color=c=0xcc3333:s=40x30'): Promise<Buffer> {
  const args = ['-v', 'error', '-f', 'lavfi', '-i', `${source},format=rgb24`];
  const out = ['-frames:v', '1', '-c:v', 'png', '-f', 'image2pipe', '-'];
  return (await promisify(execFile)('ffmpeg', [...args, ...out], { encoding: 'buffer' })).stdout;
}

/** A PDF with text on two pages. */
export function textPdf(file: string, paragraphs = 3): Promise<void> {
  const body = Array.from(
    { length: paragraphs },
    (_, i) => `<p>Paragraph ${i + 1}: quarterly revenue rose in region ${i + 1}.</p>`,
  ).join('');
  return printPdf(
    `<h1>Annual report</h1>${body}<div style="page-break-before:always"><h2>Second page</h2><p>Totals: 4711</p></div>`,
    file,
  );
}

/** A PDF of an image only, as a scanner makes: the words are pixels drawn on a canvas, no text layer. */
export function imagePdf(file: string): Promise<void> {
  return printPdf(
    `<canvas id="c" width="600" height="300"></canvas><script>
      const g = document.getElementById('c').getContext('2d');
      g.fillStyle = '#eee'; g.fillRect(0, 0, 600, 300);
      g.fillStyle = '#000'; g.font = '40px sans-serif'; g.fillText('Scanned invoice 42', 40, 150);
    </script>`,
    file,
  );
}

/** A DOCX; `headerRow: false` writes an ordinary table (no "repeat header row" mark), as most are. */
export async function docx(file: string, opts: { headerRow?: boolean } = {}): Promise<void> {
  const doc = new D.Document({
    numbering: {
      config: [
        {
          reference: 'num',
          levels: [{ level: 0, format: D.LevelFormat.DECIMAL, text: '%1.', alignment: D.AlignmentType.LEFT }],
        },
      ],
    },
    sections: [
      {
        children: [
          new D.Paragraph({ heading: D.HeadingLevel.HEADING_1, children: [new D.TextRun('Form data')] }),
          new D.Paragraph({
            children: [new D.TextRun('Customer: '), new D.TextRun({ text: 'Ada Lovelace', bold: true })],
          }),
          new D.Paragraph({ heading: D.HeadingLevel.HEADING_2, children: [new D.TextRun('Steps')] }),
          new D.Paragraph({
            numbering: { reference: 'num', level: 0 },
            children: [new D.TextRun('Open the form')],
          }),
          new D.Paragraph({
            numbering: { reference: 'num', level: 0 },
            children: [new D.TextRun('Type the name')],
          }),
          new D.Paragraph({ bullet: { level: 0 }, children: [new D.TextRun('a bullet point')] }),
          new D.Table({
            rows: [
              ['Field', 'Value'],
              ['City', 'London'],
              ['Year', '1843'],
            ].map(
              (r, i) =>
                new D.TableRow({
                  ...(i === 0 && opts.headerRow !== false ? { tableHeader: true } : {}),
                  children: r.map((c) => new D.TableCell({ children: [new D.Paragraph(c)] })),
                }),
            ),
          }),
        ],
      },
    ],
  });
  writeFileSync(file, await D.Packer.toBuffer(doc));
}

export async function xlsx(file: string, rows = 3): Promise<void> {
  const wb = new ExcelJS.Workbook();
  const a = wb.addWorksheet('Summary');
  a.addRow(['Region', 'Revenue', 'Note']);
  for (let i = 1; i <= rows; i++) a.addRow([`R${i}`, i * 1000, i === 1 ? 'first | piped' : '']);
  const b = wb.addWorksheet('Sheet2');
  b.addRow(['Name', 'Email']);
  b.addRow(['Grace', 'grace@example.org']);
  await wb.xlsx.writeFile(file);
}
