/**
 * The host's grant store: grants are created here, only from a folder the user chose (CLI argument
 * or folder dialog), and picked for a card's workspace at launch. The supervisor re-validates them.
 */
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { createGrant } from '@runboard/supervisor/grants';
import type { StatePaths } from '@runboard/supervisor/paths';
import { Grant } from '@runboard/supervisor/protocol';

export class GrantStore {
  constructor(private readonly paths: StatePaths) {}

  /** The user chose `folder`: grant it. */
  grant(folder: string): Grant {
    return createGrant(this.paths, folder);
  }

  all(): Grant[] {
    let files: string[] = [];
    try {
      files = readdirSync(this.paths.grantsDir).filter((f) => f.endsWith('.json'));
    } catch {
      return [];
    }
    const out: Grant[] = [];
    for (const f of files) {
      try {
        const g = Grant.safeParse(JSON.parse(readFileSync(path.join(this.paths.grantsDir, f), 'utf8')));
        if (g.success) out.push(g.data);
      } catch {
        // an unreadable grant file is skipped; the user can grant again
      }
    }
    return out;
  }

  /** The closest grant covering `workspace` (after realpath), or null. Newest wins among equals. */
  find(workspace: string): Grant | null {
    let real: string;
    try {
      real = realpathSync(workspace);
    } catch {
      real = path.resolve(workspace);
    }
    let best: Grant | null = null;
    for (const g of this.all()) {
      const rel = path.relative(g.path, real);
      if (rel.startsWith('..') || path.isAbsolute(rel)) continue;
      if (
        !best ||
        g.path.length > best.path.length ||
        (g.path.length === best.path.length && g.createdAt > best.createdAt)
      )
        best = g;
    }
    return best;
  }
}
