// export_document: a Markdown file of the workspace as DOCX (docx-writer.ts) or PDF (marked to
// HTML, printed by Debian's Chromium through playwright-core, styled by pdf_style.css).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { markdownToDocx } from './docx-writer.ts';
import { DocumentError, insideWorkspace, readInside, relativeOrAbsolute, writeInside } from './paths.ts';
import { resolvePdfStyle } from './pdf-style.ts';

export type ExportFormat = 'pdf' | 'docx';
/** Larger Markdown files are refused (the printer and the DOCX writer hold it all). */
const MAX_MARKDOWN_BYTES = 16 << 20;

export interface ExportOptions {
  /** The project directory, whose pdf_style.css applies when the workspace has none. */
  project?: string | undefined;
  /** The Chromium that prints PDFs (default RUNBOARD_CHROMIUM, else /usr/bin/chromium). */
  chromium?: string | undefined;
  /** Folders besides the workspace the tools may read and write (the flow's granted writable trees). */
  allow?: readonly string[] | undefined;
}

export interface ExportResult {
  /** The written file, relative to the workspace. */
  path: string;
  format: ExportFormat;
  bytes: number;
  pages?: number;
  style?: string;
  warnings: string[];
}

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// The printed page loads nothing but inline styles and data: images: a document cannot make the
// printer fetch a URL or embed a local file (file:) from outside the workspace.
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:";

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

export async function exportDocument(
  workspace: string,
  mdPath: string,
  outputPath: string | undefined,
  format: string | undefined,
  opts: ExportOptions = {},
): Promise<ExportResult> {
  const src = insideWorkspace(workspace, mdPath, opts.allow);
  if (!/\.(md|markdown|txt)$/i.test(src))
    throw new DocumentError(
      `${mdPath}: export_document converts a Markdown file (.md); write the Markdown to a .md file first`,
    );
  const fmt = (format ?? (outputPath ? path.extname(outputPath).slice(1) : '')).toLowerCase();
  if (fmt !== 'pdf' && fmt !== 'docx')
    throw new DocumentError(`format must be "pdf" or "docx", got "${format ?? fmt}"`);
  // Without an output path, the Markdown file's name with the format's extension.
  const out = insideWorkspace(workspace, outputPath ?? src.replace(/\.[^./]+$/, '') + '.' + fmt, opts.allow);
  if (path.extname(out).toLowerCase() !== '.' + fmt)
    throw new DocumentError(
      `output_path ${outputPath} does not end in .${fmt}; name it *.${fmt} or change the format`,
    );
  // Read and written as opened, never through a link (paths.ts): the checks above are on names, which
  // a run can swap for links between the check and the open.
  const allow = opts.allow ?? [];
  const markdown = (await readInside(workspace, src, allow, mdPath, MAX_MARKDOWN_BYTES)).toString('utf8');
  const title = path.basename(src).replace(/\.[^.]+$/, '');
  await mkdir(path.dirname(out), { recursive: true });
  const root = insideWorkspace(workspace, '.');
  if (fmt === 'docx') {
    const docx = await markdownToDocx(markdown, title);
    await writeInside(workspace, out, allow, outputPath ?? path.basename(out), docx);
    return {
      path: relativeOrAbsolute(root, out),
      format: 'docx',
      bytes: docx.length,
      warnings: [],
    };
  }
  const style = resolvePdfStyle(root, opts.project);
  const { marked } = await import('marked');
  const body = await marked.parse(markdown, { gfm: true });
  const html = `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${CSP}"><title>${escapeHtml(title)}</title><style>${style.css}</style></head><body>${body}</body></html>`;
  const pdf = await printPdf(html, opts.chromium);
  await writeInside(workspace, out, allow, outputPath ?? path.basename(out), pdf);
  const { getDocumentProxy } = await import('unpdf');
  const pages = (await getDocumentProxy(new Uint8Array(pdf))).numPages;
  return {
    path: relativeOrAbsolute(root, out),
    format: 'pdf',
    bytes: pdf.length,
    pages,
    style: style.source,
    warnings: style.warnings,
  };
}

async function printPdf(html: string, chromium?: string): Promise<Buffer> {
  const { chromium: pw } = await import('playwright-core');
  const executablePath = chromium ?? process.env.RUNBOARD_CHROMIUM ?? '/usr/bin/chromium';
  const browser = await pw
    .launch({ executablePath, args: CHROMIUM_ARGS, headless: true })
    .catch((e: Error) => {
      throw new DocumentError(
        `PDF export needs Chromium (${executablePath}), which did not start: ${e.message.split('\n')[0]}; install Debian's chromium (scripts/setup.sh) or set RUNBOARD_CHROMIUM`,
      );
    });
  try {
    const page = await browser.newPage();
    // The page is our own HTML: no network, no scripts needed.
    await page.route('**/*', (r) => (r.request().url().startsWith('data:') ? r.continue() : r.abort()));
    await page.setContent(html, { waitUntil: 'load' });
    return await page.pdf({
      format: 'A4',
      preferCSSPageSize: true, // a style's @page size wins where this Chromium honours it
      printBackground: true,
      displayHeaderFooter: true,
      headerTemplate: '<span></span>',
      footerTemplate:
        '<div style="font-size:8pt;color:#777;width:100%;text-align:center"><span class="pageNumber"></span> / <span class="totalPages"></span></div>',
    });
  } finally {
    await browser.close();
  }
}
