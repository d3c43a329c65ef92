/**
 * The launch keys' folder (supervisor/src/node/launch-keys.ts: a symlink per key, named by a hash of
 * the card and its key, pointing at the run id) as retention sees it: the supervisor's passes and
 * `runboard gc` (gc.ts) remove the keys of the runs they removed with the removal, not at the next
 * hourly prune.
 */
import { rmSync, readlinkSync } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import type { StatePaths } from './paths.ts';

export const launchKeysDir = (paths: StatePaths): string => path.join(paths.supervisorDir, 'launch-keys');

/**
 * Removes the keys `drop` says go (given the run a key names and when the key was made). Listed and
 * looked at off the event loop; each removal is decided again at once, in one synchronous step with
 * it, so a launch that took the key over meanwhile (it names that launch's run now) keeps it. A folder
 * that cannot be read removes nothing. Returns how many went.
 */
export async function pruneKeys(
  dir: string,
  drop: (runId: string, madeMs: number) => Promise<boolean>,
): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      const [st, runId] = await Promise.all([lstat(file), readlink(file)]);
      if (!(await drop(runId, st.mtimeMs))) continue;
      if (readlinkSync(file) !== runId) continue; // taken over by a launch since
      rmSync(file, { force: true });
      removed++;
    } catch {
      // gone meanwhile, or the disk says no: the next pass tries again
    }
  }
  return removed;
}
