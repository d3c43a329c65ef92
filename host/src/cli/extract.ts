/**
 * `runboard extract`: a recording (an in-app one, by id or folder, or an .mp4 to import) becomes a
 * card's task (docs/extraction.md). The same host core as the board's "→ task card": a run of the
 * project's extract flow, its answer through the gate, then the card; waits for the end and says how
 * it went.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import { BoardStore } from '../core/board-store.ts';
import { Extractions, ExtractRefused, type ExtractRequest } from '../core/extract.ts';
import { GrantStore } from '../core/grant-store.ts';
import { SupervisorClient } from '../core/supervisor-client.ts';

export const EXTRACT_USAGE = `extract <recording|file.mp4> [--card ID] [--flow NAME] [--extractor FLOW] [--project DIR] [--json]
                                           turn a recording into a card's task (a new card in Backlog)`;

export class ExtractUsageError extends Error {}

/** The project folder: --project, else the nearest folder with a config.yaml above the current one. */
function projectDir(given: string | undefined): string {
  if (given) return path.resolve(given);
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'config.yaml'))) return dir;
    if (path.dirname(dir) === dir)
      throw new ExtractUsageError('no config.yaml here or above: pass --project DIR');
  }
}

/** A recording id, a recording's folder in the project, or a video file. */
function inputOf(arg: string, project: string): Pick<ExtractRequest, 'recording' | 'file'> {
  if (/^rec-[0-9a-z-]+$/.test(arg) && !existsSync(arg)) return { recording: arg };
  const p = path.resolve(arg);
  if (existsSync(p) && statSync(p).isDirectory()) {
    if (path.dirname(p) !== path.join(project, 'recordings'))
      throw new ExtractUsageError(`${p} is not a recording of the project ${project} (recordings/rec-…)`);
    return { recording: path.basename(p) };
  }
  return { file: p };
}

export async function cmdExtract(args: string[], paths: StatePaths): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      card: { type: 'string' },
      flow: { type: 'string' },
      extractor: { type: 'string' },
      project: { type: 'string' },
      json: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 1)
    throw new ExtractUsageError('extract takes one recording (its id or folder) or one .mp4 file');
  const project = projectDir(values.project);
  const store = new BoardStore(project);
  store.load();
  if (store.configError) throw new ExtractUsageError(store.configError);
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  try {
    const ex = new Extractions({ store, client, grants: new GrantStore(paths), isActive: () => false });
    let started;
    try {
      started = await ex.start({
        ...inputOf(positionals[0]!, project),
        card: values.card,
        flow: values.flow,
        extractor: values.extractor,
      });
    } catch (err) {
      if (err instanceof ExtractRefused) throw new ExtractUsageError(err.message);
      throw err;
    }
    const say = (obj: Record<string, unknown>, text: string): void => {
      if (values.json) process.stdout.write(JSON.stringify(obj) + '\n');
      else process.stderr.write(text + '\n');
    };
    say(
      { type: 'extracting', cardId: started.cardId, runId: started.runId },
      `extracting the task into card ${started.cardId} (run ${started.runId}; \`runboard logs ${started.runId} -f\` follows it)`,
    );
    const out = await started.done;
    if (out.ok)
      say(
        { type: 'extracted', ...out },
        `✓ card ${out.cardId} has the task${out.questions ? `; ${out.questions} question(s) to answer in the board` : ''}`,
      );
    else say({ type: 'failed', ...out }, `✗ ${out.error}`);
    return out.ok ? 0 : 1;
  } finally {
    await store.close();
    client.close();
  }
}
