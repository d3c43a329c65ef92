/**
 * The host's grant store: grants are created here, only from a folder the user chose (CLI argument
 * or folder dialog), and picked for a card's workspace at launch. The supervisor re-validates them.
 */
import { createGrant, findGrant, listGrants } from '@runboard/supervisor/grants';
import type { StatePaths } from '@runboard/supervisor/paths';
import type { Grant } from '@runboard/supervisor/protocol';

export class GrantStore {
  constructor(private readonly paths: StatePaths) {}

  /** The user chose `folder`: grant it. */
  grant(folder: string): Grant {
    return createGrant(this.paths, folder);
  }

  all(): Grant[] {
    return listGrants(this.paths);
  }

  /** The closest grant covering `workspace` (after realpath), or null. Newest wins among equals. */
  find(workspace: string): Grant | null {
    return findGrant(this.paths, workspace);
  }
}
