// The style of exported PDFs: `pdf_style.css` in the workspace, else the project's, else this
// built-in one. An unreadable file falls back to the next and says so (a warning in the result).
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export const STYLE_FILE = 'pdf_style.css';

export const BUILTIN_CSS = `/* Runboard's built-in PDF style. Override it with a pdf_style.css in the workspace or the project. */
@page { size: A4; margin: 18mm 16mm 20mm 16mm; }
html { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 11pt; line-height: 1.45; color: #1d1d1f; }
h1, h2, h3, h4, h5, h6 { line-height: 1.2; margin: 1.2em 0 0.5em; page-break-after: avoid; }
h1 { font-size: 1.9em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
h2 { font-size: 1.45em; }
h3 { font-size: 1.2em; }
p, ul, ol, table, pre, blockquote { margin: 0 0 0.8em; }
table { border-collapse: collapse; width: 100%; page-break-inside: avoid; }
th, td { border: 1px solid #bbb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
code { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 0.92em; background: #f4f4f4; padding: 0 3px; }
pre { background: #f4f4f4; padding: 8px 10px; white-space: pre-wrap; }
pre code { background: none; padding: 0; }
blockquote { border-left: 3px solid #ccc; margin-left: 0; padding-left: 12px; color: #555; }
img { max-width: 100%; }
/* Header and footer: Chromium prints them outside the page's CSS; see pdfHeaderFooter in export.ts. */
`;

export interface ResolvedStyle {
  css: string;
  /** Where the style came from: a file path, or "built-in". */
  source: string;
  warnings: string[];
}

export function resolvePdfStyle(workspace: string, project?: string): ResolvedStyle {
  const warnings: string[] = [];
  for (const dir of [workspace, project]) {
    if (!dir) continue;
    const file = path.join(dir, STYLE_FILE);
    try {
      if (!statSync(file, { throwIfNoEntry: false })?.isFile()) continue;
      return { css: readFileSync(file, 'utf8'), source: file, warnings };
    } catch (e) {
      warnings.push(`${file} is unreadable (${(e as Error).message}); using the next style instead`);
    }
  }
  return { css: BUILTIN_CSS, source: 'built-in', warnings };
}
