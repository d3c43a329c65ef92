/**
 * A real supervisor on a private state root, for integration tests: its own RUNBOARD_HOME, a granted
 * workspace, a connected client, and a teardown that fails the test if any process of it is left.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths, type StatePaths } from '@runboard/supervisor/paths';
import type { FlowSpec, Grant, RunEvent, RunResult } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';

export const REPO = path.resolve(import.meta.dirname, '..', '..');
export const DIST = path.join(REPO, 'dist');

export interface RunRecord {
  result: RunResult;
  events: RunEvent[];
  stdout: string;
  stderr: string;
}

/** What a command printed and how it exited. */
export interface CliOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the bundled `runboard` (dist/runboard.mjs) to its end: a non-zero exit is returned, not thrown. */
export async function runboardCli(
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd: string; maxBuffer?: number },
): Promise<CliOutcome> {
  try {
    const r = await promisify(execFile)(
      process.execPath,
      [path.join(DIST, 'runboard.mjs'), ...args],
      options,
    );
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as CliOutcome;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitUntil(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A process's command line, for a message ('' when it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 200);
  } catch {
    return '';
  }
}

/** Pids of live processes whose command line or environment mentions `needle`. */
export function processesMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (/\) Z /.test(stat)) continue; // zombies hold nothing
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      let env = '';
      try {
        env = readFileSync(`/proc/${d}/environ`, 'utf8');
      } catch {
        // not ours to read
      }
      if (cmd.includes(needle) || env.includes(needle)) out.push(Number(d));
    } catch {
      // gone while we looked
    }
  }
  return out;
}

export function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

export class Harness {
  supervisor!: ChildProcess;
  client!: SupervisorClient;
  grant!: Grant;
  readonly paths: StatePaths;
  readonly workspace: string;

  private constructor(
    readonly root: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.paths = statePaths({ RUNBOARD_HOME: path.join(root, 'home') });
    this.workspace = path.join(root, 'ws');
    mkdirSync(this.workspace, { recursive: true });
  }

  /** `wrap` runs the supervisor under another command (e.g. to give it a small disk). */
  static async start(
    opts: { env?: NodeJS.ProcessEnv; wrap?: (argv: string[]) => string[] } = {},
  ): Promise<Harness> {
    const root = mkdtempSync(path.join(os.tmpdir(), 'rb-it-'));
    const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: path.join(root, 'home'), ...opts.env };
    delete env.NODE_EXTRA_CA_CERTS;
    const h = new Harness(root, env);
    h.grant = createGrant(h.paths, h.workspace);
    await h.startSupervisor(opts.wrap);
    return h;
  }

  /** `env`: more variables for this start only (e.g. a later schedule clock after a restart). */
  async startSupervisor(wrap?: (argv: string[]) => string[], env: NodeJS.ProcessEnv = {}): Promise<void> {
    const argv = [process.execPath, path.join(DIST, 'supervisor.mjs')];
    const [cmd, ...args] = wrap ? wrap(argv) : argv;
    this.supervisor = spawn(cmd!, args, { env: { ...this.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    this.supervisor.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (process.env.RB_DEBUG_SUPERVISOR) process.stderr.write(d);
    });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      this.supervisor.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('ready ')) resolve();
      });
      this.supervisor.once('exit', (code) => reject(new Error(`supervisor exited (${code}): ${stderr}`)));
    });
    this.client = await SupervisorClient.connect(this.paths);
  }

  flow(over: Partial<FlowSpec> = {}): FlowSpec {
    return { name: 'shell', runner: 'command', ...over };
  }

  launch(
    command: string | string[],
    flow: Partial<FlowSpec> = {},
    extra: { workspace?: string; grant?: unknown; paths?: string[] } = {},
  ) {
    return this.client.launch({
      card: { path: path.join(this.root, 'card.md'), title: 'test card' },
      flow: this.flow(flow),
      workspace: extra.workspace ?? this.workspace,
      grant: (extra.grant ?? this.grant) as Grant,
      command,
      ...(extra.paths ? { paths: extra.paths } : {}),
    });
  }

  /** Attaches from the start and collects everything until the run ends. */
  collect(runId: string, client = this.client): Promise<RunRecord> {
    const rec: RunRecord = { result: undefined as unknown as RunResult, events: [], stdout: '', stderr: '' };
    return new Promise((resolve, reject) => {
      client
        .attach(runId, {
          onEvent: (e) => rec.events.push(e),
          onOutput: (s, d) => (rec[s] += d),
          onEnd: (r) => resolve({ ...rec, result: r }),
        })
        .catch(reject);
    });
  }

  async run(command: string | string[], flow: Partial<FlowSpec> = {}): Promise<RunRecord> {
    const { runId } = await this.launch(command, flow);
    return this.collect(runId);
  }

  /** Stops the supervisor and checks that nothing of this harness is left running. */
  async stop(): Promise<void> {
    this.client?.close();
    if (this.supervisor.exitCode === null && this.supervisor.signalCode === null) {
      const exited = new Promise((r) => this.supervisor.once('exit', r));
      this.supervisor.kill('SIGTERM');
      await exited;
    }
    try {
      await waitUntil('no leftover processes', () => processesMentioning(this.root).length === 0, 5000).catch(
        () => {
          const left = processesMentioning(this.root);
          const what = left.map((pid) => `${pid} (${commandLine(pid)})`).join(', ');
          for (const pid of left) process.kill(pid, 'SIGKILL');
          throw new Error(`processes left behind: ${what}`);
        },
      );
    } finally {
      rmSync(this.root, { recursive: true, force: true }); // also when the test fails on leftovers
    }
  }
}
