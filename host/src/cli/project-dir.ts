/** Which project a command is about, the way every command looks for it, and what to run when there is none. */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

/** No project where the command looked: the message is one sentence saying what to run. */
export class NotHereError extends Error {}

/**
 * The project folder: `given` (it must hold a config.yaml), else the nearest folder from `from` (the
 * current folder) up that has one.
 */
export function findProjectDir(given: string | undefined, from = process.cwd()): string {
  if (given !== undefined) {
    const dir = path.resolve(given);
    if (!existsSync(dir))
      throw new NotHereError(`there is no folder ${dir}: \`runboard init ${given}\` makes a project there`);
    if (!statSync(dir).isDirectory())
      throw new NotHereError(`${dir} is a file; pass the project's folder (the one with config.yaml)`);
    if (!existsSync(path.join(dir, 'config.yaml')))
      throw new NotHereError(
        `${dir} is not a Runboard project (no config.yaml): \`runboard init ${given}\` makes it one`,
      );
    return dir;
  }
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'config.yaml'))) return dir;
    if (path.dirname(dir) === dir)
      throw new NotHereError(
        `no Runboard project in ${path.resolve(from)} or above it (no config.yaml): \`runboard init\` makes one here, or pass --project DIR`,
      );
  }
}
