// desktop-cli's windows and apps: focus, open (xdg-open), and the clipboard (X CLIPBOARD through xclip,
// which keeps owning it after we exit).
import type * as ChildProcesses from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { desktop } from '../desktop/desktop.ts';
import { type Values, type Out, num, str, targetOf, hasTarget, sleep } from './args.ts';
import { CliError } from './errors.ts';
import { postRead } from './target.ts';

export async function focus(v: Values): Promise<Out> {
  const q = targetOf(v);
  if (!hasTarget(q)) throw new CliError('USAGE', 'focus needs --app, --window, --window-id or --pid');
  const w = await desktop.focus(q);
  if (v['new-document']) {
    await desktop.key('Escape');
    await desktop.key('ctrl+n'); // cmd+n on macOS
  }
  return {
    value: {
      ok: true,
      action: 'focus',
      app: w.app,
      pid: w.pid,
      title: w.title,
      window: w.title,
      id: w.id,
      bounds: w.bounds,
      focused: w.focused,
      ...(v['new-document'] ? { new_document: true } : {}),
    },
  };
}

// node:child_process is loaded by the commands that start programs only: loading it costs every
// other command ~4 ms of CPU at start-up (it pulls in net, dgram, …).
let cp: typeof ChildProcesses | undefined;
async function childProcess(): Promise<typeof ChildProcesses> {
  cp ??= await import('node:child_process');
  return cp;
}

async function xclip(args: string[], input?: string): Promise<{ code: number; out: string; err: string }> {
  const r = (await childProcess()).spawnSync('xclip', ['-selection', 'clipboard', ...args], {
    input: input ?? '',
    encoding: 'utf8',
    // xclip forks a child that keeps serving the selection: it must not hold our pipes open.
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    timeout: 5000,
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new CliError('CLIPBOARD_UNAVAILABLE', 'xclip is not installed');
  return { code: r.status ?? -1, out: r.stdout ?? '', err: r.stderr ?? '' };
}

async function clipRead(): Promise<string> {
  if (!process.env.DISPLAY) throw new CliError('NO_DISPLAY', 'DISPLAY is not set');
  const r = await xclip(['-o']);
  // No owner, or nothing as text: an empty clipboard.
  if (r.code !== 0) {
    if (/Can't open display/i.test(r.err)) throw new CliError('NO_DISPLAY', r.err.trim());
    return '';
  }
  return r.out;
}

async function clipWrite(text: string): Promise<void> {
  if (!process.env.DISPLAY) throw new CliError('NO_DISPLAY', 'DISPLAY is not set');
  // xclip reads the text, then a child of it owns the selection until another program takes it.
  const r = (await childProcess()).spawnSync('xclip', ['-selection', 'clipboard', '-i'], {
    input: text,
    stdio: ['pipe', 'ignore', 'ignore'],
    timeout: 5000,
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new CliError('CLIPBOARD_UNAVAILABLE', 'xclip is not installed');
  if (r.status !== 0)
    throw new CliError('NO_DISPLAY', 'xclip could not take the clipboard (is DISPLAY reachable?)');
  // xclip's request to own the selection may still be in its child's output buffer when the parent
  // exits: return once the clipboard reads back the text, so the next reader (any program) sees it.
  const deadline = Date.now() + 3000;
  while ((await clipRead()) !== text) {
    if (Date.now() > deadline)
      throw new CliError(
        'ACTION_FAILED',
        'the clipboard did not take the text within 3 s (another program took it?)',
      );
    await sleep(10);
  }
}

export async function clipboard(v: Values, positionals: string[]): Promise<Out> {
  const [sub, ...rest] = positionals;
  switch (sub) {
    case 'read':
      return { value: { ok: true, action: 'clipboard-read', text: await clipRead() } };
    case 'write': {
      const text = str(v.text) ?? (rest.length > 0 ? rest.join(' ') : undefined);
      if (text === undefined)
        throw new CliError('USAGE', 'clipboard write needs the text (an argument or --text)');
      await clipWrite(text);
      return { value: { ok: true, action: 'clipboard-write' } };
    }
    case 'clear':
      await clipWrite('');
      return { value: { ok: true, action: 'clipboard-clear' } };
    case 'grab': {
      const q = targetOf(v);
      if (!hasTarget(q))
        throw new CliError('USAGE', 'clipboard grab needs --app, --window, --window-id or --pid');
      const w = await desktop.focus(q);
      const before = await clipRead();
      await clipWrite(''); // so that a copy of the same text as before is still seen as the copy
      await desktop.key('ctrl+a'); // cmd+a / cmd+c on macOS
      await desktop.key('ctrl+c');
      // The app answers the copy asynchronously: wait (≤ 2 s) until the clipboard holds something.
      const deadline = Date.now() + 2000;
      let text = await clipRead();
      while (text === '' && Date.now() < deadline) {
        await sleep(20);
        text = await clipRead();
      }
      if (text === '' && before !== '') await clipWrite(before);
      return { value: { ok: true, action: 'clipboard-grab', app: w.app, text } };
    }
    default:
      throw new CliError('USAGE', 'clipboard needs read, write <text>, clear or grab');
  }
}

// ---- open (xdg-open: the desktop's handlers) ----

export async function open(v: Values, positionals: string[]): Promise<Out> {
  let url = str(v.url);
  let file = str(v.file);
  const app = str(v.app);
  const arg = positionals[0];
  if (arg !== undefined && !url && !file) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(arg)) url = arg;
    else file = arg;
  }
  if (!url && !file && !app) throw new CliError('USAGE', 'open needs a URL, a file or --app');
  if (file && !existsSync(file)) throw new CliError('USAGE', `no such file: ${file}`);
  const before = new Set((await desktop.listWindows().catch(() => [])).map((w) => w.id));
  const what = url ?? (file ? path.resolve(file) : undefined);
  // With --app: that program with the URL/file as its argument; else the desktop's handler.
  const [cmd, args] = app ? [app, what ? [what] : []] : ['xdg-open', [what!]];
  const child = (await childProcess()).spawn(cmd, args, { detached: true, stdio: 'ignore' });
  const failed = await new Promise<Error | undefined>((res) => {
    child.once('error', res);
    child.once('spawn', () => res(undefined));
  });
  if (failed)
    throw new CliError(
      'ACTION_FAILED',
      `could not start ${cmd}: ${failed.message}${app ? ' (--app is a command on PATH, e.g. chromium, gedit)' : ''}`,
    );
  child.unref();
  const value: Record<string, unknown> = {
    ok: true,
    action: 'open',
    ...(url ? { url } : {}),
    ...(file ? { file } : {}),
    ...(app ? { app } : {}),
    pid: child.pid,
  };
  let windowId: number | undefined;
  if (v.wait || v['post-read']) {
    const timeout = num(v.timeout, 'timeout', 0, 600) ?? 10;
    const deadline = Date.now() + timeout * 1000;
    for (;;) {
      const wins = await desktop.listWindows();
      const fresh =
        wins.find(
          (w) =>
            !before.has(w.id) &&
            (w.pid === child.pid || !app || w.app.toLowerCase().includes(path.basename(app).toLowerCase())),
        ) ?? wins.find((w) => !before.has(w.id));
      if (fresh) {
        windowId = fresh.id;
        value.window = fresh.title;
        value.window_id = fresh.id;
        break;
      }
      if (Date.now() >= deadline)
        return {
          value: { ...value, ok: false, timed_out: true },
          error: new CliError('TIMEOUT', `no new window appeared within ${timeout} s`),
        };
      await sleep(100);
    }
  }
  return { value: { ...value, ...(windowId !== undefined ? await postRead(v, windowId) : {}) } };
}
