// Carrying out the document tools' calls (read.ts, export.ts and their format libraries): the MCP
// server's and the computer-use loop's one way in. A bundle of its own for the loop
// (dist/documents-tools.cjs), loaded at a run's first document tool call.
import { z } from 'zod';
import { exportDocument } from './export.ts';
import { analyzeMedia } from './media.ts';
import { DocumentError } from './paths.ts';
import { readDocument } from './read.ts';
import { DOCUMENT_PARAMS, documentTools, type DocumentScope, type DocumentToolName } from './tools.ts';

export { DocumentError };

/**
 * Carries out one call: the text the model gets (read_document: a line of JSON metadata, a blank
 * line, the Markdown; export_document: the result as JSON). Bad arguments, unreadable files and paths
 * outside the scope throw a DocumentError saying what was wrong.
 */
export async function callDocumentTool(
  scope: DocumentScope,
  name: DocumentToolName,
  args: unknown,
  /** The token of the run's vision route (analyze_media's way to the vision model). */
  token?: string,
): Promise<string> {
  if (!documentTools(scope).includes(name))
    throw new DocumentError(`${name} is not available in a read-only run`);
  const bad = (e: z.ZodError): DocumentError =>
    new DocumentError(
      `invalid arguments for ${name}: ${e.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ')}`,
    );
  if (name === 'read_document') {
    const p = z.object(DOCUMENT_PARAMS.read_document).strict().safeParse(args);
    if (!p.success) throw bad(p.error);
    const r = await readDocument(scope.workspace, p.data.path, {
      sheet: p.data.sheet,
      maxChars: p.data.max_chars,
      allow: scope.allow,
    });
    return `${JSON.stringify(r.metadata)}\n\n${r.markdown}`;
  }
  if (name === 'analyze_media') {
    const p = z.object(DOCUMENT_PARAMS.analyze_media).strict().safeParse(args);
    if (!p.success) throw bad(p.error);
    return analyzeMedia(scope, p.data.path, p.data.media_type, token);
  }
  const p = z.object(DOCUMENT_PARAMS.export_document).strict().safeParse(args);
  if (!p.success) throw bad(p.error);
  return JSON.stringify(
    await exportDocument(scope.workspace, p.data.md_path, p.data.output_path, p.data.format, {
      project: scope.project,
      allow: scope.allow,
    }),
  );
}
