/**
 * The `command` runner: runs a card's command in its workspace, the flow that needs no model.
 * The command's stdout/stderr are the worker's own (pipes to the supervisor), so output reaches the run
 * log byte for byte with no copy through this process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Runner, RunnerContext, RunnerOutcome } from './runner.ts';
import { killRunProcesses } from '../process-tree.ts';

export class CommandRunner implements Runner {
  private child: ChildProcess | undefined;
  private cancelled = false;

  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { command, workspace } = ctx.spec;
    if (command === undefined) {
      return {
        status: 'failed',
        exitCode: null,
        summary: 'the card has no `command:` to run (flow runner: command)',
        metrics: {},
      };
    }
    const [file, args] =
      typeof command === 'string' ? ['/bin/sh', ['-c', command]] : [command[0]!, command.slice(1)];
    const shown = typeof command === 'string' ? command : command.join(' ');
    ctx.progress(0, `running ${shown.length > 200 ? shown.slice(0, 200) + '…' : shown}`);
    const started = performance.now();
    const outcome = await new Promise<RunnerOutcome>((resolve) => {
      const child = spawn(file, args, {
        cwd: workspace,
        env: ctx.env,
        stdio: ['ignore', 'inherit', 'inherit'],
        // Its own process group, so that cancel reaches the whole tree where there is no PID namespace.
        detached: true,
      });
      this.child = child;
      child.once('error', (err: NodeJS.ErrnoException) => {
        const why =
          err.code === 'ENOENT'
            ? `command not found: ${file}`
            : err.code === 'EACCES'
              ? `permission denied running ${file}`
              : err.message;
        resolve({ status: 'failed', exitCode: 127, summary: why, metrics: {} });
      });
      child.once('exit', (code, signal) => {
        const metrics = { commandMs: Math.round(performance.now() - started) };
        if (code === 0)
          resolve({ status: 'succeeded', exitCode: 0, summary: 'command exited with code 0', metrics });
        else if (signal)
          resolve({
            status: 'failed',
            exitCode: null,
            summary: `command killed by ${signal}${this.cancelled ? ' (cancelled)' : ''}`,
            metrics,
          });
        else
          resolve({ status: 'failed', exitCode: code, summary: `command exited with code ${code}`, metrics });
      });
    });
    ctx.progress(1, outcome.summary);
    return outcome;
  }

  cancel(): void {
    this.cancelled = true;
    killRunProcesses(this.child?.pid, 'SIGTERM');
  }
}
