/**
 * The workspace handed to the jail as an open directory, not as a path to resolve again: between the
 * grant check and the jail's rules, a path component can be exchanged for a symlink to a folder
 * outside the grant (renameat2 RENAME_EXCHANGE from another run); rules made from the path would then
 * cover that folder. The directory is opened once and the descriptor checked: what it refers to must be
 * the checked path itself (the kernel's own name for it, /proc/self/fd), and a directory.
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync } from 'node:fs';

export class WorkspaceChangedError extends Error {}

/** The open workspace (close it after the spawn); throws WorkspaceChangedError when it is not `checked`. */
export function openWorkspace(checked: string): number {
  const fd = openSync(checked, constants.O_RDONLY | constants.O_DIRECTORY);
  let actual: string;
  try {
    actual = readlinkSync(`/proc/self/fd/${fd}`);
    if (!fstatSync(fd).isDirectory()) actual = `${actual} (not a directory)`;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  if (actual !== checked) {
    closeSync(fd);
    throw new WorkspaceChangedError(
      `the workspace ${checked} changed while the run was starting (it now leads to ${actual}); nothing ran, launch it again`,
    );
  }
  return fd;
}
