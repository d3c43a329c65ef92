/**
 * The board's recordings (seed 000/002): the project's `recordings/` listed for the renderer, and a
 * recording started from the board. The recorder runs as a process of its own, `runboard record
 * --json --control` (host/src/cli/record.ts), started here as the person who runs the board, with the
 * board's display and sound server: it must see and grab that display, so it is not a jailed run; and a
 * native crash in it ends that recording, not the board. It talks JSON lines: its stdout says what
 * happens (recording, Ctrl+I asked, paused, stopped), its stdin takes stop, pause, resume and the
 * answer to Ctrl+I; when the board goes away its stdin closes and the recording stops and is written.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { deleteRecording, listRecordings } from '@runboard/project/recording';
import YAML from 'yaml';
import type {
  ActiveRecording,
  ContextAnswer,
  Microphone,
  RecordingOutcome,
  RecordingsView,
} from '../shared/recording-types.ts';
import { Invalid, MoveRefused, NotFound } from './board-errors.ts';
import { writeAtomic, type BoardStore } from './board-store.ts';
import { cardTransition } from './card-lifecycle.ts';
import { readRegularFile } from './regular-file.ts';
import { distDir } from './supervisor-client.ts';

const START_TIMEOUT_MS = 30_000;
const MIC_CACHE_MS = 10_000;
const IMAGE = /^screenshots\/[\w.-]+\.(png|jpg)$/;

interface Child {
  process: ChildProcess;
  /** Sends a request; resolves when the recorder says `until` (or it has ended). */
  send(msg: Record<string, unknown>, until?: string): Promise<void>;
  active: ActiveRecording;
}

const ACK_TIMEOUT_MS = 10_000;

export interface RecordingsDeps {
  store: BoardStore;
  /** Something the renderer shows changed (a card was made). */
  changed: () => void;
  /** The argv that runs `runboard` (default: this Node with dist/runboard.mjs). */
  runboard?: string[];
}

export class Recordings {
  readonly dir: string;
  private child: Child | undefined;
  private last: RecordingOutcome | null = null;
  private mics: { at: number; list: Microphone[]; error?: string } | undefined;

  constructor(private readonly deps: RecordingsDeps) {
    this.dir = path.join(deps.store.projectDir, 'recordings');
  }

  async view(): Promise<RecordingsView> {
    const cards = new Map<string, { id: string; title: string }>();
    for (const c of this.deps.store.all()) {
      const rec = (c.front as Record<string, unknown>).recording;
      if (typeof rec === 'string' && c.front.id) cards.set(rec, { id: c.front.id, title: c.front.title });
    }
    const mics = await this.microphones();
    return {
      recordings: (await listRecordings(this.dir)).map((r) => ({
        id: r.id,
        startedAt: r.startedAt,
        ...(r.durationMs !== undefined ? { durationMs: r.durationMs } : {}),
        steps: r.steps,
        bytes: r.bytes,
        thumbnails: r.thumbnails,
        ...(r.message !== undefined ? { message: r.message } : {}),
        ...(cards.has(r.id) ? { card: cards.get(r.id)! } : {}),
        video: existsSync(path.join(r.dir, 'video.mp4')),
      })),
      active: this.child ? { ...this.child.active } : null,
      last: this.last,
      microphones: mics.list,
      ...(mics.error ? { microphoneError: mics.error } : {}),
      ...(process.env.DISPLAY
        ? {}
        : {
            cannotRecord:
              'this board has no X display (DISPLAY is not set), so it cannot record here: the recordings already in recordings/ still open and make cards; to record, run `runboard record` on a machine with a desktop (it records that display) and copy its recordings/<id>/ folder into this project, or import its .mp4 below',
          }),
    };
  }

  private async microphones(): Promise<{ list: Microphone[]; error?: string }> {
    if (this.mics && Date.now() - this.mics.at < MIC_CACHE_MS) return this.mics;
    const { listMicrophonesAsync } = await import('@runboard/native');
    const { sources, error } = await listMicrophonesAsync();
    this.mics = {
      at: Date.now(),
      list: sources.map((s) => ({ name: s.name, monitor: s.monitor })),
      ...(error ? { error } : {}),
    };
    return this.mics;
  }

  /**
   * Starts a recording of the board's display (with a screen video unless `video` is false, `mic`:
   * 'default', 'none' or a source name) and makes its card in Backlog; resolves once it records.
   * `secretFields`: labels of fields whose typing is a secret though they show it (`--secret-field`).
   */
  async start(
    mic: string,
    video = true,
    secretFields: string[] = [],
  ): Promise<{ id: string; cardId?: string }> {
    if (this.child) throw new MoveRefused(`recording ${this.child.active.id} is going: stop it first`);
    if (!process.env.DISPLAY)
      throw new Invalid(
        'this board has no X display (DISPLAY is not set), so it cannot record here: the recordings already in recordings/ still open and make cards; to record, run `runboard record` on a machine with a desktop (it records that display) and copy its recordings/<id>/ folder into this project',
      );
    const argv = this.deps.runboard ?? [process.execPath, path.join(distDir(), 'runboard.mjs')];
    const micArgs = !video ? ['--no-video'] : mic === 'none' ? ['--no-audio'] : ['--mic', mic];
    const child = spawn(
      argv[0]!,
      [
        ...argv.slice(1),
        'record',
        '--json',
        '--control',
        '--out',
        this.dir,
        ...micArgs,
        ...secretFields.flatMap((f) => ['--secret-field', f]),
      ],
      {
        // Electron's own binary runs the CLI as plain Node with this.
        env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    child.stdin.on('error', () => {}); // gone: its exit says why
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
    const lines = createInterface({ input: child.stdout });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const said = (): string => stderr.trim().split('\n').at(-1) ?? '';
    const first = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the recorder did not start in ${START_TIMEOUT_MS / 1000} s: ${said()}`));
      }, START_TIMEOUT_MS);
      lines.once('line', (l) => {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(l) as Record<string, unknown>);
        } catch {
          reject(new Error(`the recorder said something unexpected: ${l.slice(0, 200)}`));
        }
      });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Invalid(`the recording could not start: ${said() || `the recorder exited with ${code}`}`));
      });
    });
    const id = String(first.id);
    const active: ActiveRecording = {
      id,
      startedAt: new Date().toISOString(),
      paused: false,
      asking: false,
      audio: typeof first.audio === 'string' ? first.audio : null,
      warnings: Array.isArray(first.warnings) ? first.warnings.map(String) : [],
    };
    const waiting = new Map<string, (() => void)[]>();
    const me: Child = {
      process: child,
      active,
      send: (msg, until) =>
        new Promise<void>((resolve) => {
          if (!child.stdin.writable || child.exitCode !== null) return resolve();
          if (until) {
            const timer = setTimeout(resolve, ACK_TIMEOUT_MS);
            waiting.set(until, [
              ...(waiting.get(until) ?? []),
              () => {
                clearTimeout(timer);
                resolve();
              },
            ]);
          }
          child.stdin.write(JSON.stringify(msg) + '\n');
          if (!until) resolve();
        }),
    };
    this.child = me;
    this.last = null;
    let ended: RecordingOutcome | undefined;
    lines.on('line', (l) => {
      let m: Record<string, unknown>;
      try {
        m = JSON.parse(l) as Record<string, unknown>;
      } catch {
        return;
      }
      for (const done of waiting.get(String(m.type)) ?? []) done();
      waiting.delete(String(m.type));
      if (m.type === 'context') active.asking = active.paused = true;
      else if (m.type === 'paused') active.paused = true;
      else if (m.type === 'resumed') active.paused = active.asking = false;
      else if (m.type === 'stopped')
        ended = {
          id,
          message: String(m.message),
          warnings: Array.isArray(m.warnings) ? m.warnings.map(String) : [],
          failed: m.stopReason === 'display-lost',
        };
    });
    void exited.then((code) => {
      for (const list of waiting.values()) for (const done of list) done();
      this.last = ended ?? {
        id,
        message: `the recorder ended unexpectedly (${code ?? 'killed'}): ${said() || 'no message'}`,
        warnings: [],
        failed: true,
      };
      if (this.child === me) this.child = undefined;
      this.deps.changed();
    });
    try {
      active.cardId = this.makeCard(id);
    } catch (err) {
      active.warnings.push(`no card was made for it: ${(err as Error).message}`);
    }
    this.deps.changed();
    return { id, ...(active.cardId ? { cardId: active.cardId } : {}) };
  }

  /** The card in Backlog whose `recording:` is this recording (the flow: the first computer-use one). */
  private makeCard(id: string): string {
    const { store } = this.deps;
    const flows = Object.entries(store.config.flows);
    const flow = (flows.find(([, f]) => f.runner === 'computer-use') ?? flows[0])?.[0];
    if (!flow) throw new Error('config.yaml has no flow to give the card');
    const file = path.join(store.cardsDir, `${id}.md`);
    const title = `Recording of ${new Date().toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' })}`;
    const status = cardTransition('created', undefined, 'backlog');
    const front = YAML.stringify({ title, id, flow, status, recording: id }, { lineWidth: 0 });
    const text = `---\n${front}---\n# Task\nA demonstration recorded on the desktop (recordings/${id}/): turn it into a task, or write the task here.\n`;
    writeAtomic(file, text);
    // Taken in now (not when the watcher sees the file): the board shows the card at once.
    if (!store.ingestNew(file)) throw new Error(`the new card ${file} could not be read back`);
    return id;
  }

  private current(): Child {
    if (!this.child) throw new MoveRefused('no recording is going');
    return this.child;
  }

  /** Stops the recording; resolves once it has written everything. */
  async stop(): Promise<RecordingOutcome | null> {
    const c = this.current();
    const exited = new Promise((res) => c.process.once('exit', res));
    await c.send({ type: 'stop' });
    await exited;
    return this.last;
  }

  /** Pauses or resumes; resolves once the recorder has. */
  async pause(paused: boolean): Promise<void> {
    const c = this.current();
    if (c.active.asking) throw new MoveRefused('the recording waits for the answer to Ctrl+I first');
    await c.send({ type: paused ? 'pause' : 'resume' }, paused ? 'paused' : 'resumed');
    c.active.paused = paused;
  }

  /**
   * The answer to Ctrl+I: an extract, a note for the next step, or nothing; resolves once the
   * recording has resumed (what the person does next is recorded).
   */
  async answer(a: ContextAnswer): Promise<void> {
    const c = this.current();
    if (!c.active.asking) throw new MoveRefused('the recording is not asking (Ctrl+I was not pressed)');
    if (a.kind === 'extract' && !a.query.trim())
      throw new Invalid('an extract needs a query: what to read off the screen (e.g. "the order number")');
    if (a.kind === 'details' && !a.note.trim())
      throw new Invalid('details need a note: what the next step is for, in words');
    await c.send(
      a.kind === 'extract'
        ? { type: 'extract', query: a.query, candidates: a.candidates ?? [] }
        : a.kind === 'details'
          ? { type: 'details', note: a.note }
          : { type: 'resume' },
      'resumed',
    );
    c.active.asking = false;
    c.active.paused = false;
  }

  async delete(id: string): Promise<void> {
    if (this.child?.active.id === id) throw new MoveRefused(`recording ${id} is going: stop it first`);
    try {
      deleteRecording(this.dir, id);
    } catch (err) {
      if (err instanceof TypeError) throw new Invalid(err.message);
      throw new NotFound((err as Error).message);
    }
  }

  /**
   * A screenshot of a recording (its thumbnails), only from its screenshots/ folder, and only a regular
   * file inside the recordings folder: a run may have written there, and a link would serve a file of
   * the person's (regular-file.ts).
   */
  async file(id: string, name: string): Promise<Buffer> {
    if (!/^rec-[\w-]+$/.test(id) || !IMAGE.test(name))
      throw new Invalid(`${id}/${name} is not a recording's screenshot (screenshots/NAME.png)`);
    const file = path.join(this.dir, id, name);
    try {
      return await readRegularFile(file, { noFollow: true, maxBytes: 32 << 20, within: this.dir });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new NotFound(`no ${name} in recording ${id}`);
      throw new NotFound(`${name} of recording ${id} cannot be shown: ${(err as Error).message}`);
    }
  }

  /** The board closes: a recording going is stopped and written (its stdin closes). */
  async close(): Promise<void> {
    const c = this.child;
    if (!c) return;
    const exited = new Promise((res) => c.process.once('exit', res));
    c.process.stdin?.end();
    await Promise.race([exited, new Promise((res) => setTimeout(res, 20_000))]);
  }
}
