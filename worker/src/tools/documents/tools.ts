// The document tools as one contract for every kind of run: their parameters (zod, from which the MCP
// server and the computer-use loop's JSON schemas both come), their descriptions and which a run gets.
// Light on purpose (no format libraries): the computer-use runner loads it at every start, and
// call.ts, which carries the calls out, only at a run's first document tool call.
import { z } from 'zod';
import type { DocumentScope } from './scope.ts';

export type { DocumentScope };

export const DEFAULT_MAX_CHARS = 50_000;
export const SUPPORTED = 'PDF (.pdf), Word (.docx), Excel (.xlsx), plain text and Markdown';

export const DOCUMENT_TOOLS = ['read_document', 'export_document', 'analyze_media'] as const;
export type DocumentToolName = (typeof DOCUMENT_TOOLS)[number];

export const DOCUMENT_PARAMS = {
  read_document: {
    path: z.string().describe('file path, relative to the workspace'),
    sheet: z.string().optional().describe('Excel only: the sheet to read (default: the first)'),
    max_chars: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        `at most this many characters of Markdown (default ${DEFAULT_MAX_CHARS}); a longer text is truncated and says so`,
      ),
  },
  export_document: {
    md_path: z.string().describe('the Markdown file, relative to the workspace'),
    output_path: z
      .string()
      .optional()
      .describe(
        'the file to write, relative to the workspace (default: md_path with the format’s extension)',
      ),
    format: z
      .enum(['pdf', 'docx'])
      .optional()
      .describe('pdf or docx (default: from output_path’s extension)'),
  },
  analyze_media: {
    path: z.string().describe('image or short video file, relative to the workspace'),
    media_type: z
      .enum(['image', 'video'])
      .optional()
      .describe('image or video (default: from the file extension)'),
  },
} as const;

export const DOCUMENT_DESCRIPTIONS: Record<DocumentToolName, string> = {
  read_document: `Read a file of the workspace as Markdown with its metadata: ${SUPPORTED}. Excel: the first sheet unless \`sheet\` names another, as a Markdown table. PDFs must contain text (scanned PDFs are not supported).`,
  export_document:
    'Convert a Markdown file of the workspace to PDF or DOCX. PDFs use pdf_style.css from the workspace, else the project, else a built-in style.',
  analyze_media:
    "Describe an image (png, jpg, gif, webp) or a short video of the workspace with the flow's vision model: JSON with summary, tags and the text visible in it. If it answers with a configuration error, stop and ask the person to fix the configuration it names; do not guess what the media shows.",
};

/** The tools a run gets: all, or the ones that only read for a read-only run. */
export function documentTools(scope: DocumentScope): DocumentToolName[] {
  return scope.readOnly ? ['read_document', 'analyze_media'] : [...DOCUMENT_TOOLS];
}

/** JSON Schema of a tool's arguments (for the model APIs' function tools). */
export function documentJsonSchema(name: DocumentToolName): Record<string, unknown> {
  const { $schema: _, ...schema } = z.toJSONSchema(z.object(DOCUMENT_PARAMS[name]).strict()) as Record<
    string,
    unknown
  >;
  return schema;
}
