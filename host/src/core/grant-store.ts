/**
 * The host's grant store: grants are created here, only from a folder the user chose (CLI argument
 * or folder dialog), and picked for a card's workspace at launch. The supervisor re-validates them.
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createGrant,
  findGrant,
  GrantError,
  listGrants,
  revokedGrants,
  stateRootConflict,
} from '@runboard/supervisor/grants';
import { ErrorCodes } from '@runboard/supervisor/protocol';
import {
  desktopSocketDirs,
  installDirs,
  protectedConflict,
  type ProtectedDir,
} from '@runboard/supervisor/protected-dirs';
import type { StatePaths } from '@runboard/supervisor/paths';
import type { Grant } from '@runboard/supervisor/protocol';
import type { FolderListing } from '../shared/board-types.ts';
import { distDir } from './supervisor-client.ts';

function defaultProtected(): ProtectedDir[] {
  let install: ProtectedDir[] = [];
  try {
    install = installDirs(distDir());
  } catch {
    // no bundles found (a test of the sources): nothing installed to protect
  }
  return [...install, ...desktopSocketDirs(process.env)];
}

/** Whether a card's folder is granted, as the board shows it (the supervisor decides at launch). */
export type GrantStatus =
  | { state: 'ok'; grant: string }
  /** `revoked`: the grant that covered it, revoked by the supervisor at its start, and why. */
  | { state: 'none'; revoked?: { path: string; why: string } }
  | { state: 'stale'; grant: string; reason: string };

/** How long a folder's grant status is reused (a board view asks for every card's). */
const STATUS_TTL_MS = 2000;

export class GrantStore {
  private readonly cache = new Map<string, { at: number; status: GrantStatus }>();

  /**
   * `protect`: folders never granted, nor any folder around them (default: Runboard's install folder
   * from the bundles' dist/, and the desktop's sockets: protected-dirs.ts).
   */
  constructor(
    private readonly paths: StatePaths,
    private readonly protect: () => readonly ProtectedDir[] = defaultProtected,
  ) {}

  /**
   * The user chose `folder` (or allowed a run's ask always): grant it. Refused for a folder that is,
   * holds or lies in Runboard's state (createGrant), Runboard's install folder or the desktop's sockets.
   */
  grant(folder: string): Grant {
    let real: string | undefined;
    try {
      real = realpathSync(folder);
    } catch {
      // createGrant says it does not exist
    }
    // Runboard's state first: the graver reason, and createGrant says it in its own words.
    const conflict = real && !stateRootConflict(this.paths, real) && protectedConflict(real, this.protect());
    if (conflict)
      throw new GrantError(
        ErrorCodes.GrantCoversState,
        'protected',
        `cannot grant ${folder}: ${conflict}; grant a folder outside it`,
      );
    const g = createGrant(this.paths, folder);
    this.cache.clear();
    return g;
  }

  /**
   * Whether `workspace` is covered by a grant, and whether that grant still names the folder it was
   * made for (same device and inode: a folder deleted and made again, or replaced by a checkout, is
   * not the folder the user chose). What the board shows; the supervisor checks again at each launch.
   */
  status(workspace: string): GrantStatus {
    const hit = this.cache.get(workspace);
    if (hit && Date.now() - hit.at < STATUS_TTL_MS) return hit.status;
    const status = this.statusNow(workspace);
    this.cache.set(workspace, { at: Date.now(), status });
    if (this.cache.size > 10_000) this.cache.clear();
    return status;
  }

  private statusNow(workspace: string): GrantStatus {
    const g = this.find(workspace);
    if (!g) {
      let real = workspace;
      try {
        real = realpathSync(workspace);
      } catch {
        // not there: compared as written
      }
      const r = revokedGrants(this.paths).find(
        (x) => real === x.path || real.startsWith(x.path.endsWith('/') ? x.path : x.path + '/'),
      );
      return r ? { state: 'none', revoked: { path: r.path, why: r.why } } : { state: 'none' };
    }
    let st;
    try {
      st = statSync(g.path, { bigint: true });
    } catch {
      return { state: 'stale', grant: g.path, reason: `the granted folder ${g.path} no longer exists` };
    }
    if (st.dev.toString() !== g.dev || st.ino.toString() !== g.ino)
      return {
        state: 'stale',
        grant: g.path,
        reason: `${g.path} was replaced since it was granted (another folder of that name now)`,
      };
    return { state: 'ok', grant: g.path };
  }

  /** The subfolders of `folder` (default: the user's home) for the folder picker. */
  list(folder?: string): FolderListing {
    const home = os.homedir();
    const dir = path.resolve(folder || home);
    const granted = new Set(this.all().map((g) => g.path));
    const folders = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
      .map((e) => ({
        name: e.name,
        path: path.join(dir, e.name),
        granted: granted.has(path.join(dir, e.name)),
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const parent = path.dirname(dir);
    return { path: dir, ...(parent !== dir ? { parent } : {}), home, folders };
  }

  all(): Grant[] {
    return listGrants(this.paths);
  }

  /** The closest grant covering `workspace` (after realpath), or null. Newest wins among equals. */
  find(workspace: string): Grant | null {
    return findGrant(this.paths, workspace);
  }
}
