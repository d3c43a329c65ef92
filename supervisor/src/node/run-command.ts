/**
 * A `command` run has no worker: the jail's init runs the command, and the run's start and report come
 * from the jail's status lines. What those say, as the lines and the report a worker would send.
 */
import { constants as osConstants } from 'node:os';
import type { Command, FlowSpec } from '../protocol/index.ts';
import { signalName, type FinishedReport, type JailExit } from './classify-end.ts';

/**
 * The command line the jail's init runs itself, for a `command` run (no Node start, no endpoint);
 * undefined when a worker runs (every other runner, or `nodeWorker`: RUNBOARD_COMMAND_WORKER=node).
 */
export function directCommand(
  flow: FlowSpec,
  command: Command | undefined,
  nodeWorker: boolean,
): string[] | undefined {
  if (flow.runner !== 'command' || command === undefined || nodeWorker) return undefined;
  return typeof command === 'string' ? ['/bin/sh', '-c', command] : [...command];
}

/** A command line as a person would type it (for the run's progress line). */
export function commandShown(argv: string[]): string {
  return argv[0] === '/bin/sh' && argv[1] === '-c' && argv.length === 3 ? argv[2]! : argv.join(' ');
}

/** The progress line of a command that starts (cut at 200 characters). */
export function commandStartLine(argv: string[]): string {
  const shown = commandShown(argv);
  return `running ${shown.length > 200 ? shown.slice(0, 200) + '…' : shown}`;
}

/**
 * How the run's command ended, as the jail's init saw it, as the run's report (as a worker's);
 * `cancelled`: the person cancelled the run (said when a signal ended the command).
 */
export function commandReport(
  c: NonNullable<JailExit['command']>,
  argv: string[],
  cancelled: boolean,
): FinishedReport {
  const file = argv[0] === '/bin/sh' && argv[1] === '-c' ? '/bin/sh' : (argv[0] ?? '');
  const summary = c.execErrno
    ? c.execErrno === osConstants.errno.ENOENT
      ? `command not found: ${file}`
      : c.execErrno === osConstants.errno.EACCES
        ? `permission denied running ${file}`
        : `could not run ${file} (errno ${c.execErrno})`
    : c.code === 0
      ? 'command exited with code 0'
      : c.code === null
        ? `command killed by ${signalName(c.signal)}${cancelled ? ' (cancelled)' : ''}`
        : `command exited with code ${c.code}`;
  return {
    status: c.code === 0 && !c.execErrno ? 'succeeded' : 'failed',
    exitCode: c.execErrno ? 127 : c.code,
    summary,
    metrics: { commandMs: c.ms },
  };
}
