/**
 * The GTK form app (tests/fixtures' form, `formApp`) on a test desktop, for board tests that replay or
 * record on it: started and waited for until its window has an accessibility tree (then focused),
 * closed, and its elements read back by what they are.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { desktop, type Element } from '../../../native/src/index.ts';
import { find, formApp } from '../../cu/cu-harness.ts';
import { waitUntil } from './board.ts';

export class FormApp {
  private child: ChildProcess | undefined;

  /** `env`: the desktop session's environment, asked for at each start. */
  constructor(
    readonly title: string,
    private readonly env: () => NodeJS.ProcessEnv,
  ) {}

  /** Starts the app (with `args`, e.g. `--variant renamed`) and waits for its window and tree. */
  async start(args: string[] = []): Promise<void> {
    const title = this.title;
    const child = spawn('/usr/bin/python3', [formApp, '--title', title, ...args], {
      env: this.env(),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.child = child;
    await waitUntil(
      `the window "${title}" with its accessibility tree`,
      async () => {
        if (child.exitCode !== null) throw new Error(`form app exited with ${child.exitCode}`);
        const win = (await desktop.listWindows({ title })).find((w) => w.title === title);
        const tree = win && (await desktop.read({ windowId: win.id }).catch(() => undefined));
        if (!win || !tree?.elements.length) return undefined;
        await desktop.focus({ windowId: win.id });
        return win;
      },
      20_000,
    );
  }

  /** Closes the app started last (if it still runs) and waits for it to exit. */
  async close(): Promise<void> {
    const f = this.child;
    this.child = undefined;
    if (!f || f.exitCode !== null) return;
    const gone = new Promise((r) => f.once('exit', r));
    f.kill('SIGTERM');
    await gone;
  }

  /** The app's element that `pred` picks (hidden ones included); throws when there is none. */
  element(pred: (e: Element) => boolean): Promise<Element> {
    return find(this.title, pred);
  }
}
