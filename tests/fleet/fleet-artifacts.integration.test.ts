/**
 * The artifacts of a remote run (what a runner writes into `<run>/artifacts` on its host: screenshots,
 * the live frame, schema.json, task.md) reach the run's folder on the board's side while it runs and
 * after, where the board's inspector reads them as it does a local run's. The run writes that folder,
 * so it is hostile input: links, files over the cap, FIFOs on the host; forged records with names
 * that climb out of the run's folder on the board's side. The test plays the run: it writes into the
 * host's run folder directly (a command run has no artifacts folder of its own).
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLogDir } from '@runboard/supervisor/paths';
import type { RunEvent, RunResult } from '@runboard/supervisor/protocol';
import { RunFiles } from '../../host/src/core/run-files.ts';
import type { Harness } from '../helpers/harness.ts';
import { waitUntil } from '../helpers/harness.ts';
import { startGateway, startHost } from './hosts.ts';
import type { RedisServer } from './redis.ts';

const CAP = 64 * 1024;
let redis: RedisServer;
let board: Harness;
let host: Harness;

beforeAll(async () => {
  ({ board, redis } = await startGateway({ RUNBOARD_FLEET_ARTIFACT_MAX_BYTES: String(CAP) }));
  host = await startHost(redis.url, 'art', ['shell'], 2, ['.'], {
    RUNBOARD_FLEET_ARTIFACT_MAX_BYTES: String(CAP),
  });
}, 120_000);

afterAll(async () => {
  await host?.stop().catch(() => undefined);
  await board?.stop();
  await redis?.stop();
});

/** A run on the host that goes on until the test touches `stop-<tag>` in the host's workspace. */
async function heldRun(tag: string): Promise<{
  runId: string;
  done: Promise<{ result: RunResult; events: RunEvent[] }>;
  hostDir: string;
  boardDir: string;
  release: () => void;
}> {
  const { runId, logDir } = await board.launch(
    `echo "start ${tag}"; while [ ! -e stop-${tag} ]; do sleep 0.05; done; echo "end ${tag}"`,
  );
  const done = board.collect(runId);
  let hostRunId = '';
  await waitUntil(
    'a host took the run',
    async () => {
      const { run } = await board.client.getRun(runId);
      hostRunId = typeof run.metrics.hostRunId === 'string' ? run.metrics.hostRunId : '';
      return hostRunId !== '';
    },
    20_000,
  );
  const hostDir = runLogDir(host.paths, hostRunId);
  return {
    runId,
    done,
    hostDir,
    boardDir: logDir,
    release: () => writeFileSync(path.join(host.workspace, `stop-${tag}`), ''),
  };
}

/** Files under `dir` whose bytes contain `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const full = path.join(e.parentPath, e.name);
    if (e.isFile() && readFileSync(full).includes(needle)) out.push(full);
  }
  return out;
}

const errors = (events: RunEvent[]): string[] =>
  events.filter((e) => e.type === 'error').map((e) => e.message ?? '');

describe("a remote run's artifacts", () => {
  it('reach the run folder on the board side while the run goes on and after it ended, as locally', async () => {
    const run = await heldRun('legit');
    const art = path.join(run.hostDir, 'artifacts');
    mkdirSync(path.join(art, 'steps'), { recursive: true });
    const shot = Buffer.alloc(40_000, 7); // more than one piece of the stream needs a smaller cap; bytes
    writeFileSync(path.join(art, 'steps', 'step-001.png'), shot);
    writeFileSync(path.join(art, 'live.jpg'), 'frame 1');
    writeFileSync(path.join(art, 'schema.json'), '{"ok":true}\n');
    const mirrored = path.join(run.boardDir, 'artifacts');
    await waitUntil(
      'the artifacts mirrored while running',
      () =>
        existsSync(path.join(mirrored, 'live.jpg')) &&
        existsSync(path.join(mirrored, 'steps', 'step-001.png')) &&
        existsSync(path.join(mirrored, 'schema.json')),
      15_000,
    );
    expect(readFileSync(path.join(mirrored, 'steps', 'step-001.png'))).toEqual(shot);
    // The board's inspector code sees the screenshot and the live frame, while the run goes on.
    const files = new RunFiles(board.paths, async (id) => (await board.client.getRun(id)).run);
    expect((await files.list(run.runId)).screenshots).toEqual(['artifacts/steps/step-001.png']);
    expect((await files.liveFrame(run.runId)).toString()).toBe('frame 1');
    // A new frame replaces the old one (atomically, as the runner writes it).
    writeFileSync(path.join(art, 'live.tmp'), 'frame 2');
    execFileSync('mv', [path.join(art, 'live.tmp'), path.join(art, 'live.jpg')]);
    await waitUntil(
      'the new frame mirrored',
      () => readFileSync(path.join(mirrored, 'live.jpg'), 'utf8') === 'frame 2',
      15_000,
    );
    // The run ends: its last artifact comes along, the live frame goes as it does locally.
    writeFileSync(path.join(art, 'report.md'), '# done\n');
    unlinkSync(path.join(art, 'live.jpg'));
    run.release();
    const { result, events } = await run.done;
    expect(result.status).toBe('succeeded');
    expect(errors(events)).toEqual([]);
    expect(readdirSync(mirrored).sort()).toEqual(['report.md', 'schema.json', 'steps']);
    expect(readFileSync(path.join(mirrored, 'report.md'), 'utf8')).toBe('# done\n');
    expect(readFileSync(path.join(run.boardDir, 'stdout.log'), 'utf8')).toBe('start legit\nend legit\n');
  });

  it('a hostile run on the host: links are not followed, a file over the cap is refused with a clear reason, a FIFO blocks nothing', async () => {
    const secret = path.join(host.root, 'secret.txt');
    writeFileSync(secret, 'TOP-SECRET-HOST-FILE');
    mkdirSync(path.join(host.root, 'private'));
    writeFileSync(path.join(host.root, 'private', 'key.png'), 'TOP-SECRET-HOST-FILE');
    const run = await heldRun('hostile');
    const art = path.join(run.hostDir, 'artifacts');
    mkdirSync(art, { recursive: true });
    symlinkSync(secret, path.join(art, 'leak.png'));
    symlinkSync(path.join(host.root, 'private'), path.join(art, 'dir'));
    symlinkSync('../../../../secret.txt', path.join(art, 'rel.txt'));
    writeFileSync(path.join(art, 'big.bin'), Buffer.alloc(CAP + 1));
    execFileSync('mkfifo', [path.join(art, 'pipe.png')]);
    writeFileSync(path.join(art, 'zz-ok.png'), 'fine');
    await waitUntil(
      'the run says the big file was refused',
      async () => {
        const ev = readFileSync(path.join(run.boardDir, 'events.jsonl'), 'utf8');
        return /big\.bin/.test(ev) && /leak\.png/.test(ev);
      },
      15_000,
    );
    run.release();
    const { result, events } = await run.done;
    expect(result.status).toBe('succeeded');
    const mirrored = path.join(run.boardDir, 'artifacts');
    expect(readdirSync(mirrored)).toEqual(['zz-ok.png']);
    const why = errors(events).join('\n');
    expect(why).toMatch(
      new RegExp(
        `"big\\.bin" was not copied here: it is ${CAP + 1} bytes, over the fleet's cap of ${CAP} bytes`,
      ),
    );
    expect(why).toMatch(/"big\.bin".*it stays on art/);
    expect(why).toMatch(/"leak\.png" was not copied here: it is a symbolic link/);
    expect(why).toMatch(/"dir" was not copied here: it is a symbolic link/);
    // Nothing of the host's secret reached the board's side.
    expect(filesContaining(run.boardDir, 'TOP-SECRET')).toEqual([]);
  });

  it('forged records that name paths out of the run folder, or are over the cap, write nothing there', async () => {
    const run = await heldRun('forged');
    const key = `runboard:run:${run.runId}:records`;
    const r = new Redis(redis.url);
    const names = ['../../escape.txt', '/tmp/rb-abs-escape.txt', 'a/../../../b.txt', '..', 'x//y', 'a/./b'];
    try {
      for (const n of names) await r.xadd(key, '*', 'k', 'artifact', 'n', n, 'o', '0', 't', '4', 'd', 'evil');
      await r.xadd(key, '*', 'k', 'artifact', 'n', 'huge.bin', 'o', '0', 't', String(CAP * 100), 'd', 'x');
      await r.xadd(key, '*', 'k', 'artifact', 'n', 'liar.bin', 'o', '0', 't', '2', 'd', 'more than two');
      await r.xadd(key, '*', 'k', 'artifact-gone', 'n', '../result.json');
    } finally {
      r.disconnect();
    }
    // The host meets them at its next record (the run's last line, once released): its own ids are no
    // longer the stream's newest, and the ones it wrote are not where it put them.
    run.release();
    const { result, events } = await run.done;
    // The host finds records it did not write in the run's stream, and stops the run.
    expect(result.status).toBe('failed');
    expect(result.termination?.detail).toMatch(/has records this host did not write/);
    const logs = board.paths.logsDir;
    expect(existsSync(path.resolve(run.boardDir, 'artifacts', '../../escape.txt'))).toBe(false);
    expect(existsSync(path.resolve(run.boardDir, '../b.txt'))).toBe(false);
    expect(existsSync('/tmp/rb-abs-escape.txt')).toBe(false);
    expect(existsSync(path.join(run.boardDir, 'result.json'))).toBe(true);
    expect(readdirSync(path.join(run.boardDir, 'artifacts'))).toEqual([]);
    expect(filesContaining(logs, 'evil')).toEqual([]);
    const why = errors(events).join('\n');
    expect(why).toMatch(/"\.\.\/\.\.\/escape\.txt" was not copied here: its name has a "\.\." component/);
    expect(why).toMatch(/"\/tmp\/rb-abs-escape\.txt" was not copied here: its name has an absolute path/);
    expect(why).toMatch(/"huge\.bin" was not copied here: it is \d+ bytes, over the fleet's cap/);
    expect(why).toMatch(/"liar\.bin" was not copied here: it came with more bytes than announced/);
  });
});
