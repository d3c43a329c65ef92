/**
 * Computer-use runs for tests: the test desktop (scripts/desktop-session.sh: Xvfb + D-Bus + AT-SPI +
 * openbox), the GTK form app in it, a real supervisor whose model proxy forwards to the scripted model
 * server, and provider keys stored as users store them. The model server is the only test double.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FlowSpec } from '@runboard/supervisor/protocol';
import { desktop, type Element, type WindowInfo } from '../../native/src/index.ts';
import { writeProviderKey } from '../../supervisor/src/common/secrets.ts';
import { DesktopSession, sleep } from '../desktop/session.ts';
import { startModelServer, type Episode, type ModelServer } from '../fixtures/model-server/server.ts';
import { Harness, REPO, type RunRecord } from '../helpers/harness.ts';

export const KEYS = {
  openai: 'sk-test-openai-0123456789',
  anthropic: 'sk-ant-test-0123456789',
  local: 'local-key-0123456789',
};
export const formApp = path.join(REPO, 'tests', 'fixtures', 'desktop', 'form_app.py');

export class CuHarness {
  private cards = 0;
  private forms: ChildProcess[] = [];
  private constructor(
    readonly h: Harness,
    readonly model: ModelServer,
    readonly session: DesktopSession | null,
  ) {}

  static async start(
    opts: {
      keys?: boolean;
      desktop?: boolean;
      monitors?: string[];
      env?: NodeJS.ProcessEnv;
      /** Runs the supervisor under another command (a baseline build's bundle: bench/cu-ab-main.ts). */
      wrap?: (argv: string[]) => string[];
    } = {},
  ): Promise<CuHarness> {
    const session =
      opts.desktop === false
        ? null
        : await DesktopSession.start(opts.monitors ? { monitors: opts.monitors } : {});
    let model: ModelServer | undefined;
    let h: Harness;
    try {
      model = await startModelServer();
      h = await Harness.start({
        env: {
          RUNBOARD_PROVIDER_OPENAI_URL: model.url,
          RUNBOARD_PROVIDER_ANTHROPIC_URL: model.url,
          RUNBOARD_PROVIDER_LOCAL_URL: model.url,
          // vision profiles of other providers than the run's (tests/documents)
          RUNBOARD_PROVIDER_GEMINI_URL: model.url,
          RUNBOARD_PROVIDER_ZHIPU_URL: model.url,
          ...opts.env,
        },
        ...(opts.wrap ? { wrap: opts.wrap } : {}),
      });
    } catch (err) {
      // Leave no desktop or server behind when start-up fails half-way (tests and benchmarks alike).
      await model?.close();
      await session?.stop();
      throw err;
    }
    if (opts.keys !== false) {
      writeProviderKey(h.paths, 'openai', KEYS.openai);
      writeProviderKey(h.paths, 'anthropic', KEYS.anthropic);
      writeProviderKey(h.paths, 'local', KEYS.local);
    }
    return new CuHarness(h, model, session);
  }

  episodes(e: Episode[]): void {
    this.model.setEpisodes(e);
  }

  card(title: string, body: string): string {
    const file = path.join(this.h.root, `card-${++this.cards}.md`);
    writeFileSync(
      file,
      `---\ntitle: ${title}\nflow: desktop\n---\n# Task\n${body}\n\n## Questions\n- None.\n`,
    );
    return file;
  }

  flow(over: Partial<FlowSpec> = {}, cu: NonNullable<FlowSpec['computerUse']> = {}): FlowSpec {
    return {
      name: 'desktop',
      runner: 'computer-use',
      provider: 'openai',
      model: 'gpt-5.2-codex',
      heartbeatTimeoutMs: 30_000,
      timeoutMs: 120_000,
      prompt: path.join(REPO, 'prompts', 'execution_agent'),
      // no allowAbstractUnix: X clients in the run take the display's path socket (decision 134)
      ...(this.session
        ? {
            env: {
              DISPLAY: this.session.env.DISPLAY!,
              DBUS_SESSION_BUS_ADDRESS: this.session.env.DBUS_SESSION_BUS_ADDRESS!,
            },
          }
        : {}),
      ...over,
      computerUse: { imageMaxWidth: 640, ...cu },
    };
  }

  launch(cardFile: string, flow: FlowSpec) {
    return this.h.client.launch({
      card: { path: cardFile, title: path.basename(cardFile) },
      flow,
      workspace: this.h.workspace,
      grant: this.h.grant,
    });
  }

  async run(cardFile: string, flow: FlowSpec): Promise<RunRecord> {
    const { runId } = await this.launch(cardFile, flow);
    return this.h.collect(runId);
  }

  /** Starts the GTK form app and waits until its window and accessibility tree are there. */
  async startForm(title: string, extraEnv: NodeJS.ProcessEnv = {}, args: string[] = []): Promise<WindowInfo> {
    const child = spawn('/usr/bin/python3', [formApp, '--title', title, ...args], {
      env: { ...this.session!.env, ...extraEnv },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.forms.push(child);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const win = (await desktop.listWindows({ title })).find((w) => w.title === title);
      if (win) {
        const tree = await desktop.read({ windowId: win.id }).catch(() => undefined);
        if (tree && tree.elements.length > 0) {
          await desktop.focus({ windowId: win.id });
          return win;
        }
      }
      if (child.exitCode !== null) throw new Error(`form app exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error(`window "${title}" did not appear`);
      await sleep(50);
    }
  }

  async closeForms(): Promise<void> {
    for (const f of this.forms.splice(0)) {
      if (f.exitCode !== null) continue;
      const gone = new Promise((r) => f.once('exit', r));
      f.kill('SIGTERM');
      await gone;
    }
  }

  async stop(): Promise<void> {
    await this.closeForms();
    await this.h.stop();
    await this.model.close();
    await this.session?.stop();
  }
}

/** Elements of a window, flattened. */
export async function elements(title: string): Promise<Element[]> {
  const r = await desktop.read({ title, visibleOnly: false });
  const out: Element[] = [];
  const walk = (els: Element[]): void => {
    for (const e of els) {
      out.push(e);
      walk(e.children);
    }
  };
  walk(r.elements);
  return out;
}

export async function find(title: string, pred: (e: Element) => boolean): Promise<Element> {
  const e = (await elements(title)).find(pred);
  if (!e) throw new Error(`no such element in "${title}"`);
  return e;
}

/** Centre of a screen rectangle, as a pixel of a screenshot of `source` downscaled by `scale`. */
export function imagePoint(
  b: [number, number, number, number],
  scale: number,
  origin: [number, number] = [0, 0],
) {
  return {
    x: Math.floor((b[0] - origin[0] + b[2] / 2) * scale),
    y: Math.floor((b[1] - origin[1] + b[3] / 2) * scale),
  };
}

/** The worker log events of a run that carry `kind` (cu-step, cu-final, …), as their data. */
export function cuEvents(rec: RunRecord, kind: string): Record<string, unknown>[] {
  return rec.events
    .filter((e) => e.type === 'log' && e.data && (e.data as { kind?: string }).kind === kind)
    .map((e) => e.data as Record<string, unknown>);
}

export function artifact(rec: RunRecord, file: string): string | null {
  const p = path.join(rec.result.logDir, 'artifacts', file);
  return existsSync(p) ? readFileSync(p, 'utf8') : null;
}

export const final = (o: Record<string, unknown>): { text: string } => ({ text: JSON.stringify(o) });
export const act = (args: Record<string, unknown>) => ({
  toolCalls: [{ name: 'desktop_action', arguments: args }],
});

/** An Escape from "the person" (through the "Xvfb keyboard" device, not XTest): tests/fixtures/desktop/person_key.py. */
export function personPressesEscape(env: NodeJS.ProcessEnv): void {
  execFileSync(
    '/usr/bin/python3',
    [path.join(REPO, 'tests', 'fixtures', 'desktop', 'person_key.py'), 'Escape'],
    {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
}
