/**
 * A run's files for the inspector: its screenshots, the live frame of a computer-use run, and the
 * whole run dir as a .tar.gz. The run dir is found through the shared path helper (`runLogDir`), the
 * run's state through the supervisor; nothing here knows the log-dir layout beyond that.
 */
import { closeSync, createReadStream, readdirSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { ARTIFACTS_DIR, LIVE_FRAME_FILE } from '@runboard/supervisor/protocol';
import { runLogDir, type StatePaths } from '@runboard/supervisor/paths';
import type { RunFiles as RunFileList, RunResult } from '../shared/board-types.ts';
import { checkRunId, NotFound } from './board-errors.ts';
import { openRegularFileSync, readRegularFile } from './regular-file.ts';

/**
 * The run wrote its artifacts folder: what is read there is opened as a regular file and never through
 * a link (O_NOFOLLOW, then fstat on the descriptor: no race between a check and the read), else a run
 * could have the board show, or put in an export a person shares, a file of the person's own.
 */
const RUN_WRITTEN = { noFollow: true, maxBytes: 64 << 20 } as const;

const IMAGE = /\.(png|jpe?g|webp|gif)$/i;
/** A computer-use run's live view frame: not a step screenshot. */
const LIVE_FRAME = `${ARTIFACTS_DIR}/${LIVE_FRAME_FILE}`;

export class RunFiles {
  constructor(
    private readonly paths: StatePaths,
    /** The run as the supervisor has it now (NotFound when it has none). */
    private readonly runNow: (runId: string) => Promise<RunResult>,
  ) {}

  /** The run's dir: a malformed id is Invalid, a run without a dir NotFound. */
  dir(runId: string): string {
    checkRunId(runId);
    const dir = runLogDir(this.paths, runId);
    try {
      if (statSync(dir).isDirectory()) return dir;
    } catch {
      // no such dir
    }
    throw new NotFound(`no run ${runId}`);
  }

  async list(runId: string): Promise<RunFileList> {
    const dir = this.dir(runId);
    const screenshots: string[] = [];
    const walk = async (rel: string): Promise<void> => {
      for (const e of await readdir(path.join(dir, rel), { withFileTypes: true })) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory() && r.split('/').length < 3) await walk(r);
        else if (e.isFile() && IMAGE.test(e.name) && r !== LIVE_FRAME) screenshots.push(r);
      }
    };
    await walk('');
    return { screenshots: screenshots.sort() };
  }

  /**
   * An image of a run, only when it is one of its screenshots, read as a regular file inside the run's
   * dir, bounded, off the server's thread.
   */
  async screenshot(runId: string, name: string): Promise<Buffer> {
    if (!(await this.list(runId)).screenshots.includes(name)) throw new NotFound(`no screenshot ${name}`);
    const dir = this.dir(runId);
    try {
      return await readRegularFile(path.join(dir, name), { ...RUN_WRITTEN, within: dir });
    } catch (err) {
      throw new NotFound(`screenshot ${name} of run ${runId} cannot be shown: ${(err as Error).message}`);
    }
  }

  /**
   * The live frame of a running computer-use run on a private display (the worker rewrites it about once
   * a second, atomically). Only while the supervisor says the run is running: after the end (or a worker
   * that died before removing it) there is no live view, only the step screenshots.
   */
  async liveFrame(runId: string): Promise<Buffer> {
    const dir = this.dir(runId);
    if ((await this.runNow(runId)).status !== 'running')
      throw new NotFound(`run ${runId} has ended: no live view`);
    try {
      return await readRegularFile(path.join(dir, LIVE_FRAME), { ...RUN_WRITTEN, within: dir }); // ~30 KB; may go any moment
    } catch {
      throw new NotFound(`run ${runId} has no live frame (yet)`);
    }
  }

  /**
   * The run dir as one .tar.gz: checks the run first (so a refusal can still be a clear error), then
   * answers the writer that sends it to `out`.
   */
  exporter(runId: string): (out: Writable) => Promise<void> {
    const dir = this.dir(runId);
    return async (out) => {
      const pack = tar.pack();
      const done = pipeline(pack, createGzip(), out);
      const add = async (rel: string): Promise<void> => {
        for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
          const r = rel ? `${rel}/${e.name}` : e.name;
          if (e.isDirectory()) await add(r);
          else if (e.isFile()) {
            let opened: { fd: number; st: { size: number; mtime: Date } };
            try {
              opened = openRegularFileSync(path.join(dir, r), { noFollow: true });
            } catch {
              continue; // replaced meanwhile by a link or something else: not exported
            }
            const { fd, st } = opened;
            const header = { name: `${runId}/${r}`, size: st.size, mtime: st.mtime };
            await new Promise<void>((resolve, reject) => {
              const cb = (err?: Error | null): void => (err ? reject(err) : resolve());
              if (st.size === 0) {
                closeSync(fd);
                return void pack.entry(header, '', cb);
              }
              // a growing log: send exactly the size announced in the header
              createReadStream('', { fd, start: 0, end: st.size - 1 })
                .on('error', reject)
                .pipe(pack.entry(header, cb));
            });
          }
        }
      };
      await add('');
      pack.finalize();
      await done;
    };
  }
}
