// The document tools read and write only inside the run's workspace. A path is resolved against the
// workspace and, where it exists, through its symlinks (a link inside pointing outside is outside).
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

export class DocumentError extends Error {
  override name = 'DocumentError';
}

function real(p: string): string {
  // The deepest existing ancestor decides: a file about to be written does not exist yet.
  let dir = p;
  const rest: string[] = [];
  while (!existsSync(dir)) {
    const parent = path.dirname(dir);
    if (parent === dir) break;
    rest.unshift(path.basename(dir));
    dir = parent;
  }
  return path.join(realpathSync(dir), ...rest);
}

/**
 * The absolute path of `p` (relative to the workspace or absolute), refused when it leaves the workspace
 * and every folder of `also` (the flow's granted writable trees, which the jail gives the run too).
 */
export function insideWorkspace(workspace: string, p: string, also: readonly string[] = []): string {
  if (typeof p !== 'string' || p.trim() === '')
    throw new DocumentError('path is empty: give a file path inside the workspace');
  const root = realpathSync(workspace);
  const abs = real(path.resolve(root, p));
  for (const dir of [root, ...also.map((d) => real(d))]) {
    const rel = path.relative(dir, abs);
    if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) return abs;
  }
  throw new DocumentError(
    `${p} ${OUTSIDE} (${root}); the document tools read and write only files inside it${also.length ? " and the flow's sandbox.writable folders" : ''}: copy the file into the workspace, or, to allow it, grant its folder (\`runboard grant DIR\`) and add it to the flow's sandbox.writable in config.yaml`,
  );
}

const OUTSIDE = 'is outside the workspace';

/**
 * A document tool's refusal of a path outside the run's workspace, from its error text: a permission
 * the person may give (the card asks), never something the agent may work around. What to ask, with
 * how to allow it; null when the text is not such a refusal.
 */
export function outsideRefusal(text: string): string | null {
  const i = text.indexOf(` ${OUTSIDE} (`);
  if (i <= 0) return null;
  const p = text.slice(0, i).split('\n').pop()!;
  return `${p} ${OUTSIDE}; to allow it, grant its folder (runboard grant DIR) and add it to the flow's sandbox.writable`;
}

/** A path as the tools report it: relative to the workspace, or absolute in an allowed folder outside it. */
export function relativeOrAbsolute(root: string, abs: string): string {
  const rel = path.relative(root, abs);
  return rel.startsWith('..') || path.isAbsolute(rel) ? abs : rel;
}
