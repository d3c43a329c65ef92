/** The board's folders: the folder picker's listing and the granted folders a card may work in. */
import path from 'node:path';
import type { CardForm, FolderListing } from '../shared/board-types.ts';
import { Invalid, MoveRefused, NotFound } from './board-errors.ts';
import type { GrantStore } from './grant-store.ts';

/** The folder picker: the subfolders of `folder` (default: the user's home). */
export function listFolders(grants: GrantStore, folder?: string): FolderListing {
  if (folder !== undefined && folder !== '' && !path.isAbsolute(folder))
    throw new Invalid(`not an absolute folder path: ${folder}`);
  try {
    return grants.list(folder);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new NotFound(`no folder ${folder}`);
    if (code === 'ENOTDIR') throw new Invalid(`${folder} is not a folder`);
    if (code === 'EACCES') throw new MoveRefused(`${folder} cannot be read (permission denied)`);
    throw err;
  }
}

/** The granted folders a card may work in (the editor's choices). */
export function cardForm(grants: GrantStore, projectDir: string): CardForm {
  const seen = new Set<string>();
  const workspaces = [];
  for (const g of grants.all().sort((a, b) => a.path.localeCompare(b.path))) {
    if (seen.has(g.path)) continue;
    seen.add(g.path);
    workspaces.push({ path: g.path, label: workspaceValue(projectDir, g.path) ?? '. (the project folder)' });
  }
  return { projectDir, workspaces };
}

/** How a card names `folder`: relative to the project folder when inside it; undefined for the project folder. */
export function workspaceValue(projectDir: string, folder: string): string | undefined {
  const rel = path.relative(projectDir, folder);
  if (rel === '') return undefined;
  return rel.startsWith('..') || path.isAbsolute(rel) ? folder : `./${rel}`;
}
