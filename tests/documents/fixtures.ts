// Real documents made by the libraries that write them: DOCX by `docx`, XLSX by exceljs, PDFs printed
// by Debian's Chromium (one with text, one of an image only, as a scanner makes).
import { writeFileSync } from 'node:fs';
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

/** A small PNG, screenshot by Chromium. */
export async function png(): Promise<Buffer> {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
    headless: true,
  });
  try {
    const page = await browser.newPage({ viewport: { width: 40, height: 30 } });
    await page.setContent('<body style="margin:0;background:#c33"></body>');
    return await page.screenshot();
  } finally {
    await browser.close();
  }
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
