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

/** The absolute path of `p` (relative to the workspace or absolute), refused when it leaves the workspace. */
export function insideWorkspace(workspace: string, p: string): string {
  if (typeof p !== 'string' || p.trim() === '')
    throw new DocumentError('path is empty: give a file path inside the workspace');
  const root = realpathSync(workspace);
  const abs = real(path.resolve(root, p));
  const rel = path.relative(root, abs);
  if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) return abs;
  throw new DocumentError(
    `${p} is outside the workspace (${root}); the document tools read and write only files inside it: copy the file into the workspace or give a path inside it`,
  );
}
