// read_document: a file of the workspace as Markdown plus metadata. Each format is read by a
// maintained library (docs/decisions.md): PDF text by unpdf (pdf.js), DOCX by mammoth (to HTML) and
// turndown (to Markdown, GFM tables), XLSX by exceljs. The size limit applies to the Markdown.
import path from 'node:path';
import { DocumentError, insideWorkspace, readInside, relativeOrAbsolute } from './paths.ts';
import { checkZipBounds } from './zip-bounds.ts';
import { DEFAULT_MAX_CHARS, SUPPORTED } from './tools.ts';

export { DEFAULT_MAX_CHARS, SUPPORTED };
/** Larger files are refused before they are read. */
export const MAX_DOCUMENT_BYTES = 64 << 20;
/** PDFs with more pages are refused (pdf.js reads every page's text). */
export const MAX_PDF_PAGES = 2_000;
/** A document that takes longer to read is given up with an error saying so. */
export const READ_TIME_LIMIT_MS = 60_000;
const TEXT_EXTENSIONS = new Set([
  '.txt',
  '.md',
  '.markdown',
  '.csv',
  '.tsv',
  '.json',
  '.yaml',
  '.yml',
  '.log',
]);

export type DocumentFormat = 'pdf' | 'docx' | 'xlsx' | 'text' | 'markdown';

export interface DocumentMetadata {
  /** The path relative to the workspace. */
  path: string;
  format: DocumentFormat;
  bytes: number;
  pages?: number;
  sheets?: string[];
  sheet?: string;
  /** Characters of the whole Markdown, before truncation. */
  chars: number;
  truncated: boolean;
}

export interface ReadResult {
  markdown: string;
  metadata: DocumentMetadata;
}

export interface ReadOptions {
  sheet?: string | undefined;
  maxChars?: number | undefined;
  /** Folders besides the workspace the tools may read (the flow's granted writable trees). */
  allow?: readonly string[] | undefined;
}

export function formatOf(file: string): DocumentFormat {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.pdf') return 'pdf';
  if (ext === '.docx') return 'docx';
  if (ext === '.xlsx') return 'xlsx';
  if (ext === '.md' || ext === '.markdown') return 'markdown';
  if (TEXT_EXTENSIONS.has(ext)) return 'text';
  throw new DocumentError(
    `${path.basename(file)}: unsupported format "${ext || '(none)'}"; read_document reads ${SUPPORTED}`,
  );
}

export async function readDocument(
  workspace: string,
  file: string,
  opts: ReadOptions = {},
): Promise<ReadResult> {
  const abs = insideWorkspace(workspace, file, opts.allow);
  const format = formatOf(abs);
  const maxChars = opts.maxChars ?? DEFAULT_MAX_CHARS;
  if (!Number.isInteger(maxChars) || maxChars < 1)
    throw new DocumentError(`max_chars must be a positive whole number, got ${String(opts.maxChars)}`);
  if (opts.sheet !== undefined && format !== 'xlsx')
    throw new DocumentError(`sheet is only for Excel files; ${file} is ${format}`);
  const data = await readInside(workspace, abs, opts.allow ?? [], file, MAX_DOCUMENT_BYTES);
  const meta: Omit<DocumentMetadata, 'chars' | 'truncated'> = {
    path: relativeOrAbsolute(insideWorkspace(workspace, '.'), abs),
    format,
    bytes: data.length,
  };
  let markdown: string;
  // DOCX and XLSX are ZIPs: their inflated size is bounded before a library inflates them.
  if (format === 'docx' || format === 'xlsx') checkZipBounds(file, data);
  let timer: NodeJS.Timeout | undefined;
  const timeLimit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new DocumentError(
            `${file}: reading it took more than ${READ_TIME_LIMIT_MS / 1000} s; given up (split the document, or export the part you need as text)`,
          ),
        ),
      READ_TIME_LIMIT_MS,
    );
  });
  const parse = async (): Promise<string> => {
    if (format === 'pdf') {
      const r = await readPdf(data, file);
      meta.pages = r.pages;
      return r.markdown;
    }
    if (format === 'docx') return readDocx(data);
    if (format === 'xlsx') {
      const r = await readXlsx(data, opts.sheet);
      meta.sheets = r.sheets;
      meta.sheet = r.sheet;
      return r.markdown;
    }
    return data.toString('utf8');
  };
  try {
    markdown = await Promise.race([parse(), timeLimit]);
  } catch (e) {
    if (e instanceof DocumentError) throw e;
    throw new DocumentError(`${file}: cannot read as ${format}: ${(e as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
  const chars = markdown.length;
  const truncated = chars > maxChars;
  if (truncated)
    markdown =
      markdown.slice(0, maxChars) +
      `\n\n[truncated: showing ${maxChars} of ${chars} characters; call read_document with a larger max_chars to read more]`;
  return { markdown, metadata: { ...meta, chars, truncated } };
}

async function readPdf(data: Buffer, file: string): Promise<{ markdown: string; pages: number }> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  const doc = await getDocumentProxy(new Uint8Array(data));
  if (doc.numPages > MAX_PDF_PAGES) {
    await doc.cleanup();
    throw new DocumentError(
      `${file}: ${doc.numPages} pages, more than the ${MAX_PDF_PAGES} read_document reads; split the PDF`,
    );
  }
  const { totalPages, text } = await extractText(doc, { mergePages: false });
  if (text.every((t) => t.trim() === ''))
    throw new DocumentError('Unsupported PDF: no extractable text (scanned PDF not supported).');
  const markdown = text
    .map((t, i) => (totalPages > 1 ? `<!-- page ${i + 1} -->\n\n${t.trim()}` : t.trim()))
    .join('\n\n');
  return { markdown, pages: totalPages };
}

interface DocxElement {
  type: string;
  children?: DocxElement[];
  isHeader?: boolean;
}

/**
 * Most Word tables have no "repeat header row" mark; GFM needs a header row, and without one turndown
 * wrote an empty header and the real header as data. A table without a marked header row gets its
 * first row as the header (mammoth's document model, before HTML).
 */
function firstRowsAsHeaders<T>(doc: T): T {
  const visit = (el: DocxElement): void => {
    if (el.type === 'table') {
      const rows = (el.children ?? []).filter((c) => c.type === 'tableRow');
      if (rows.length > 1 && !rows.some((r) => r.isHeader)) rows[0]!.isHeader = true;
    }
    for (const c of el.children ?? []) visit(c);
  };
  visit(doc as DocxElement);
  return doc;
}

async function readDocx(data: Buffer): Promise<string> {
  const mammoth = (await import('mammoth')).default;
  const { default: TurndownService } = await import('turndown');
  const { gfm } = await import('@joplin/turndown-plugin-gfm');
  // Inline code written by export_document (docx-writer.ts) reads back as code.
  const { value: html } = await mammoth.convertToHtml(
    { buffer: data },
    // externalFileAccess: a DOCX may link an image by path; reading it would leave the workspace
    {
      styleMap: ["r[style-name='Code'] => code"],
      externalFileAccess: false,
      transformDocument: firstRowsAsHeaders,
    },
  );
  const td = new TurndownService({ headingStyle: 'atx', bulletListMarker: '-', codeBlockStyle: 'fenced' });
  td.use(gfm);
  return td.turndown(html).trim();
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>').trim();
}

/** Rows as a GFM table: the first row is the header (a sheet has no other notion of one). */
export function markdownTable(rows: string[][]): string {
  const width = Math.max(1, ...rows.map((r) => r.length));
  const pad = (r: string[]): string[] => Array.from({ length: width }, (_, i) => cell(r[i] ?? ''));
  const [head = [], ...body] = rows;
  return [
    `| ${pad(head).join(' | ')} |`,
    `|${' --- |'.repeat(width)}`,
    ...body.map((r) => `| ${pad(r).join(' | ')} |`),
  ].join('\n');
}

async function readXlsx(
  data: Buffer,
  wanted: string | undefined,
): Promise<{ markdown: string; sheets: string[]; sheet: string }> {
  const { default: ExcelJS } = await import('exceljs');
  const wb = new ExcelJS.Workbook();
  // exceljs's typings predate Node's generic Buffer.
  await wb.xlsx.load(data as unknown as ArrayBuffer);
  const sheets = wb.worksheets.map((w) => w.name);
  const ws = wanted === undefined ? wb.worksheets[0] : wb.worksheets.find((w) => w.name === wanted);
  if (!ws)
    throw new DocumentError(
      wanted === undefined
        ? 'the workbook has no sheet'
        : `no sheet named "${wanted}"; the workbook's sheets are: ${sheets.map((s) => `"${s}"`).join(', ')}`,
    );
  const rows: string[][] = [];
  // exceljs computes columnCount by walking every row: once, not per row.
  const columns = ws.columnCount;
  ws.eachRow({ includeEmpty: true }, (row) => {
    const r: string[] = [];
    for (let c = 1; c <= columns; c++) r.push(row.getCell(c).text ?? '');
    rows.push(r);
  });
  while (rows.length && rows[rows.length - 1]!.every((c) => c === '')) rows.pop();
  const markdown = rows.length === 0 ? `(sheet "${ws.name}" is empty)` : markdownTable(rows);
  return { markdown, sheets, sheet: ws.name };
}
