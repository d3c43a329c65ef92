// A card's `@path` references (`@report.pdf`, `@data/book.xlsx#Sheet2`), as seed 004 gives them to its
// agent: metadata only (path, name, type, size, the sheet asked for), never the content, which the run
// reads through read_document. Read in the worker, inside the run's jail, against the run's document
// scope: a reference outside it is listed with the reason, not looked at.
import { statSync } from 'node:fs';
import path from 'node:path';
import { insideWorkspace, outsideRefusal, relativeOrAbsolute } from './paths.ts';
import type { DocumentScope } from './scope.ts';

export interface Attachment {
  path: string;
  name: string;
  /** The extension without its dot (`xlsx`, `pdf`), or `file`. */
  type: string;
  bytes?: number;
  /** `@book.xlsx#Sheet2`: the sheet the card names. */
  sheet?: string;
  /** Why the run cannot read it (missing, a folder, outside the workspace). */
  error?: string;
}

// `@` at the start of a word (not an e-mail address), then a path with a dot or a slash in it (not an
// @mention), optionally `#sheet`; trailing punctuation of the sentence is not part of it.
const REF = /(?<![\w@])@((?:[\w.~-]*[./][\w./~-]*)(?:#[^\s,;:!?)\]]+)?)/g;

/** The card's body without its front matter. */
function body(card: string): string {
  const m = /^---\r?\n[\s\S]*?\r?\n---\r?\n/.exec(card);
  return m ? card.slice(m[0].length) : card;
}

/** The `@path` references of a card (in order, each once), as attachments of the run. */
export function cardAttachments(
  card: string,
  scope: Pick<DocumentScope, 'workspace' | 'allow'>,
): Attachment[] {
  const seen = new Set<string>();
  const out: Attachment[] = [];
  for (const m of body(card).matchAll(REF)) {
    const ref = m[1]!.replace(/[.,;:!?]+$/, '');
    if (seen.has(ref)) continue;
    seen.add(ref);
    const [file, sheet] = ref.split('#', 2) as [string, string | undefined];
    const ext = path.extname(file).slice(1).toLowerCase();
    const a: Attachment = {
      path: file,
      name: path.basename(file),
      type: ext || 'file',
      ...(sheet ? { sheet } : {}),
    };
    try {
      const abs = insideWorkspace(scope.workspace, file, scope.allow);
      a.path = relativeOrAbsolute(insideWorkspace(scope.workspace, '.'), abs);
      const st = statSync(abs, { throwIfNoEntry: false });
      if (!st) a.error = 'no such file in the workspace';
      else if (!st.isFile()) a.error = 'not a file';
      else a.bytes = st.size;
    } catch (err) {
      a.error = outsideRefusal((err as Error).message) ?? (err as Error).message;
    }
    out.push(a);
  }
  return out;
}

/** The attachments as the prompt's {{ATTACHMENTS}} shows them: a JSON array, one file a line (`[]`: none). */
export function attachmentsJson(list: readonly Attachment[]): string {
  return list.length ? `[\n${list.map((a) => `  ${JSON.stringify(a)}`).join(',\n')}\n]` : '[]';
}
