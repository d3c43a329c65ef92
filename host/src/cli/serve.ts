/**
 * `runboard serve`: the headless host. Opens the project's board (store, scheduler, supervisor) and
 * serves the kanban UI to a browser on 127.0.0.1 with a per-launch token.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import { BoardService } from '../core/board-service.ts';
import { distDir } from '../core/supervisor-client.ts';
import { serve } from '../server/server.ts';

export const SERVE_USAGE = `serve [--project DIR] [--port N]         serve the board UI on http://127.0.0.1 (prints the URL)`;

export async function cmdServe(args: string[], paths: StatePaths): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { project: { type: 'string' }, port: { type: 'string' } },
  });
  const projectDir = path.resolve(values.project ?? 'project');
  const started = performance.now();
  const service = await BoardService.open(projectDir, paths);
  const server = await serve(service, {
    port: Number(values.port ?? 0),
    rendererDir: path.join(distDir(), 'renderer'),
  });
  process.stdout.write(
    `Runboard board for ${projectDir}\n` +
      `Open this URL in a browser (it holds this launch's access token):\n\n  ${server.url}\n\n` +
      `ready in ${Math.round(performance.now() - started)} ms · Ctrl-C stops the board (runs go on in the supervisor)\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  await service.close();
  return 0;
}
