// One test desktop for the whole desktop suite (scripts/desktop-session.sh), the apps started in it,
// and the desktop-cli bundle; everything is torn down by stop().
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { allElements } from '../../native/src/desktop/compact.ts';
import { desktop, type Element, type WindowInfo } from '../../native/src/index.ts';
// @ts-expect-error: a plain .mjs build script without type declarations
import { cliBuildOptions, yamlBuildOptions } from '../../native/scripts/bundle-cli.mjs';
import { chromiumWindow } from '../helpers/chromium.ts';

export const repo = path.resolve(import.meta.dirname, '..', '..');
export const formApp = path.join(repo, 'tests', 'fixtures', 'desktop', 'form_app.py');
export const testPage = path.join(repo, 'tests', 'fixtures', 'desktop', 'page.html');
const nativeDir = path.join(repo, 'native', 'build', 'Release');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: unknown;
}

export class DesktopSession {
  private apps: ChildProcess[] = [];
  private constructor(
    private readonly session: ChildProcess,
    readonly env: NodeJS.ProcessEnv,
    readonly tmp: string,
    readonly cli: string,
  ) {}

  /** `monitors`: sizes of monitors side by side ("1280x1024"), on Xorg's dummy driver instead of Xvfb. */
  static async start(opts: { monitors?: string[] } = {}): Promise<DesktopSession> {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'runboard-desktop-test-'));
    const envFile = path.join(tmp, 'session.env');
    const session = spawn('bash', [path.join(repo, 'scripts', 'desktop-session.sh'), 'start', envFile], {
      detached: true, // its own process group: stop() ends the whole desktop
      env: { ...process.env, ...(opts.monitors ? { DESKTOP_MONITORS: opts.monitors.join(',') } : {}) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const deadline = Date.now() + 20_000;
    while (!existsSync(envFile) || !readFileSync(envFile, 'utf8').includes('READY=1')) {
      if (session.exitCode !== null) throw new Error(`desktop-session.sh exited with ${session.exitCode}`);
      if (Date.now() > deadline) {
        process.kill(-session.pid!, 'SIGTERM'); // its process group: the X server and all
        throw new Error('the test desktop did not start in 20 s');
      }
      await sleep(20);
    }
    const vars = Object.fromEntries(
      readFileSync(envFile, 'utf8')
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    // The in-process addon reads these when it first connects.
    process.env.DISPLAY = vars.DISPLAY;
    process.env.DBUS_SESSION_BUS_ADDRESS = vars.DBUS_SESSION_BUS_ADDRESS;
    delete process.env.NO_AT_BRIDGE;
    const cli = path.join(tmp, 'desktop-cli.cjs');
    await build(cliBuildOptions(cli)); // the same bundle an agent runs
    await build(yamlBuildOptions(path.join(tmp, 'desktop-yaml.cjs'))); // --format yaml, do, fill
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DISPLAY: vars.DISPLAY,
      DBUS_SESSION_BUS_ADDRESS: vars.DBUS_SESSION_BUS_ADDRESS,
      RUNBOARD_HOME: path.join(tmp, 'home'),
      RUNBOARD_NATIVE_DIR: nativeDir,
      // No sound server unless a test starts one: a client must not autospawn the user's PulseAudio.
      PULSE_SERVER: `unix:${path.join(tmp, 'no-sound-server')}`,
    };
    return new DesktopSession(session, env, tmp, cli);
  }

  /** Starts the GTK form app and waits until its window and accessibility tree are there. */
  async startForm(
    title: string,
    extraEnv: NodeJS.ProcessEnv = {},
    args: string[] = [],
    waitForTree = true,
  ): Promise<WindowInfo> {
    const child = spawn('/usr/bin/python3', [formApp, '--title', title, ...args], {
      env: { ...this.env, ...extraEnv },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.apps.push(child);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const wins = await desktop.listWindows({ title });
      const win = wins.find((w) => w.title === title);
      if (win && !waitForTree) return win;
      if (win) {
        const tree = await desktop.read({ windowId: win.id }).catch(() => undefined);
        if (tree && tree.elements.length > 0) return win;
      }
      if (child.exitCode !== null) throw new Error(`form app exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error(`window "${title}" did not appear`);
      await sleep(50);
    }
  }

  /** Starts the GTK keys app (keys_app.py: Code, a radio group, PIN) and waits for its accessibility tree. */
  async startKeysApp(title: string): Promise<ChildProcess> {
    const child = spawn(
      '/usr/bin/python3',
      [path.join(repo, 'tests/fixtures/desktop/keys_app.py'), '--title', title],
      {
        env: this.env,
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    this.apps.push(child);
    const up = await eventually(
      async () => (await findElement(title, 'radio button', 'Large').catch(() => null)) !== null,
      20_000,
    );
    if (!up) throw new Error(`the window "${title}" did not appear`);
    return child;
  }

  spawnApp(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
    const child = spawn(cmd, args, { env: { ...this.env, ...env }, stdio: 'ignore', detached: true });
    this.apps.push(child);
    return child;
  }

  /**
   * Debian's Chromium on the test page (its window "Runboard Test Page - Chromium", 700x760 at 560,20),
   * its web content on AT-SPI: that takes both ACCESSIBILITY_ENABLED and --force-renderer-accessibility
   * (and as root, --no-sandbox). It does not wait for the page.
   */
  spawnTestPage(): ChildProcess {
    const { args, env } = chromiumWindow({
      profile: `${this.tmp}/chromium`,
      at: [560, 20],
      size: [700, 760],
      url: `file://${testPage}`,
    });
    return this.spawnApp('chromium', args, env);
  }

  /** Runs desktop-cli (the bundle, as an agent would) and parses its stdout as JSON when it is. */
  run(args: string[], env: NodeJS.ProcessEnv = this.env, input?: string): CliResult {
    const r = spawnSync(process.execPath, [this.cli, ...args], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
      ...(input !== undefined ? { input } : {}),
    });
    let json: unknown;
    try {
      json = JSON.parse(r.stdout);
    } catch {
      json = undefined;
    }
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, json };
  }

  /** Live processes (zombies aside) still in the process groups this session started. */
  leftovers(): number[] {
    const groups = new Set([this.session.pid, ...this.apps.map((a) => a.pid)]);
    const live: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const [state, , pgid] = fields;
        if (state !== 'Z' && (groups.has(Number(pgid)) || groups.has(Number(entry))))
          live.push(Number(entry));
      } catch {
        // gone while we looked
      }
    }
    return live;
  }

  async stop(): Promise<void> {
    for (const app of this.apps) {
      if (app.exitCode !== null || app.signalCode !== null) continue;
      try {
        if (app.spawnargs[0] === '/usr/bin/python3') app.kill('SIGTERM');
        else process.kill(-app.pid!, 'SIGKILL'); // detached: its own group (browsers start helpers)
      } catch {
        // already gone
      }
    }
    if (this.session.exitCode === null) {
      const done = new Promise((res) => this.session.once('exit', res));
      process.kill(-this.session.pid!, 'SIGTERM');
      await Promise.race([done, sleep(5000)]);
      try {
        process.kill(-this.session.pid!, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
    const deadline = Date.now() + 5000;
    while (this.leftovers().length > 0 && Date.now() < deadline) await sleep(50);
    rmSync(this.tmp, { recursive: true, force: true });
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((res) => setTimeout(res, ms));
}

/** Polls `fn` until it returns a truthy value (or the deadline passes, then returns the last value). */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await fn();
  while (!last && Date.now() < deadline) {
    await sleep(25);
    last = await fn();
  }
  return last;
}

/** Pixels of the takeover HUD's colour (magenta, #b0206a) in a screen region: is the HUD there? */
export async function hudPixels(region: [number, number, number, number]): Promise<number> {
  const shot = await desktop.capture({ region, format: 'raw', cursor: false });
  let n = 0;
  for (let i = 0; i < shot.data.length; i += 4)
    if (
      Math.abs(shot.data[i]! - 0xb0) < 8 &&
      Math.abs(shot.data[i + 1]! - 0x20) < 8 &&
      Math.abs(shot.data[i + 2]! - 0x6a) < 8
    )
      n++;
  return n;
}

/** The element of `role` named `name` in the window titled `title` (its accessibility tree, read now). */
export async function findElement(title: string, role: string, name: string): Promise<Element> {
  const els = allElements((await desktop.read({ title })).elements);
  const el = els.find((e) => e.role === role && e.name === name);
  if (!el) throw new Error(`no ${role} "${name}" in "${title}"`);
  return el;
}

/** One frame of a video as RGB triples (`at`: seconds from the start, or negative from the end). */
export function videoFrame(file: string, at: number): Buffer {
  const seek = at < 0 ? ['-sseof', String(at)] : ['-ss', String(at)];
  const r = spawnSync(
    'ffmpeg',
    ['-v', 'error', ...seek, '-i', file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  if (r.status !== 0) throw new Error(`ffmpeg could not read a frame of ${file}: ${r.stderr?.toString()}`);
  return r.stdout;
}
