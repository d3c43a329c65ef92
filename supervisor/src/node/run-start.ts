/**
 * Starting a run's jail (Run.spawn, run.ts): the workspace opened and checked (workspace-fd.ts), the
 * jail's command line (run-jail.ts), the process started with the run's log files, and the fds the
 * supervisor no longer needs closed. What went wrong is said as the run's end, never thrown.
 */
import { closeSync } from 'node:fs';
import type { TerminationReason } from '../protocol/index.ts';
import type { JailOutput } from './output-files.ts';
import { jailCommand, startJail, type JailCommandInput, type JailProcess } from './run-jail.ts';
import { openWorkspace } from './workspace-fd.ts';

/** The started jail and what the run may read (its allow-list), or why it could not start. */
export type JailStart =
  { child: JailProcess; readable: string[] | undefined } | { failed: TerminationReason; detail: string };

export function startRunJail(i: Omit<JailCommandInput, 'workspaceOpen'>, output: JailOutput): JailStart {
  // The workspace goes to the jail open, checked against the path the grant check resolved.
  let workspaceFd: number | undefined;
  if (!i.spec.flow.readOnly) {
    try {
      workspaceFd = openWorkspace(i.workspace);
    } catch (err) {
      return { failed: 'sandbox-failed', detail: (err as Error).message };
    }
  }
  const jail = jailCommand({ ...i, workspaceOpen: workspaceFd !== undefined });
  try {
    const child = startJail(i.deps.jailPath, jail, i.workspace, workspaceFd, output.fileFds, !i.direct);
    return { child, readable: jail.readable };
  } catch (err) {
    return { failed: 'spawn-failed', detail: `could not start the worker: ${(err as Error).message}` };
  } finally {
    if (workspaceFd !== undefined) closeSync(workspaceFd); // the jail has its own copy
    output.handedOver(); // so are the log files
  }
}
