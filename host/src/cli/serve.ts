/**
 * `runboard serve`: the headless host. Opens the project's board (store, scheduler, supervisor) and
 * serves the kanban UI to a browser on 127.0.0.1 with a per-launch token; opens that browser when
 * the person is at a terminal with one.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import { openBoard } from '../core/open-board.ts';
import { distDir } from '../core/supervisor-client.ts';
import { serve } from '../server/server.ts';
import { findProjectDir } from './project-dir.ts';

export const SERVE_USAGE = `serve [--project DIR] [--port N] [--open|--no-open]  serve the board of the project here (or above) on http://127.0.0.1`;

/**
 * The command that opens a URL in a browser, or undefined. `$BROWSER` when set (the usual convention),
 * else `xdg-open` where a display is. Asked for (`--open`) or by default at a terminal outside CI;
 * `--no-open` or RUNBOARD_NO_BROWSER=1 never.
 */
function opener(flag: boolean | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (flag === false || env.RUNBOARD_NO_BROWSER === '1') return undefined;
  if (flag === undefined && (!process.stdout.isTTY || env.CI)) return undefined;
  if (env.BROWSER) return env.BROWSER;
  return env.DISPLAY || env.WAYLAND_DISPLAY ? 'xdg-open' : undefined;
}

export async function cmdServe(args: string[], paths: StatePaths): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      project: { type: 'string' },
      port: { type: 'string' },
      open: { type: 'boolean' },
      'no-open': { type: 'boolean' },
    },
  });
  const projectDir = findProjectDir(values.project);
  const started = performance.now();
  const service = await openBoard(projectDir, paths);
  const server = await serve(service, {
    port: Number(values.port ?? 0),
    rendererDir: path.join(distDir(), 'renderer'),
  });
  // The project served is registered (as `init` does): its schedules run on once this board closes.
  const registered = await service.registerProject().then(
    () => true,
    (err: Error) => {
      process.stderr.write(
        `runboard: schedules of this project run only while a board is open (could not register it: ${err.message})\n`,
      );
      return false;
    },
  );
  const open = opener(values['no-open'] ? false : values.open, process.env);
  process.stdout.write(
    `Runboard board for ${projectDir}\n` +
      `Open this URL in a browser (it holds this launch's access token):\n\n  ${server.url}\n\n` +
      `ready in ${Math.round(performance.now() - started)} ms · Ctrl-C stops the board (runs go on in the supervisor` +
      `${registered ? ', and so do its scheduled cards' : ''})\n`,
  );
  if (open) {
    // The URL as one argument, never through a shell; a missing opener is only a line, not an error.
    const child = spawn(open, [server.url], { stdio: 'ignore', detached: true });
    child.on('error', (err) =>
      process.stderr.write(`runboard: could not open a browser (${err.message}); open the URL above\n`),
    );
    child.unref();
  }
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  await service.close();
  return 0;
}
