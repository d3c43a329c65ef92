/**
 * The host keeps going when what it stands on misbehaves: a supervisor killed under it, entries in
 * cards/ that are not regular files (a directory, FIFOs), a card hand-edited to `status: running`.
 * A real `runboard serve` with its auto-started supervisor, real files, no browser.
 */
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BoardServer, DIST, REPO, shellCard, shellConfig, waitUntil } from '../e2e/helpers/board.ts';
import { pidAlive } from '../helpers/harness.ts';

const config = (maxConcurrency = 4): string => shellConfig('', maxConcurrency);
const card = shellCard;

let server: BoardServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** A request whose status is part of the answer (BoardServer.api throws on any error status). */
async function request(
  s: BoardServer,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: { error?: string } }> {
  const res = await fetch(s.base + p, {
    method,
    headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: (await res.json()) as { error?: string } };
}

function supervisorPid(s: BoardServer): Promise<number> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [path.join(DIST, 'runboard.mjs'), 'supervisor', 'status', '--json'],
      { env: { ...process.env, RUNBOARD_HOME: s.home } },
      (err, stdout) => (err ? reject(err) : resolve((JSON.parse(stdout) as { pid: number }).pid)),
    ),
  );
}

/** The messages of a run's SSE stream as they come, until `stop()`. */
function openRunStream(
  s: BoardServer,
  runId: string,
): { messages: { type: string; [k: string]: unknown }[]; stop(): void } {
  const messages: { type: string; [k: string]: unknown }[] = [];
  const ac = new AbortController();
  void (async () => {
    const res = await fetch(`${s.base}/api/runs/${runId}/stream`, {
      headers: { authorization: `Bearer ${s.token}` },
      signal: ac.signal,
    });
    let tail = '';
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
      const parts = (tail + chunk).split('\n\n');
      tail = parts.pop()!;
      for (const p of parts) if (p.startsWith('data: ')) messages.push(JSON.parse(p.slice(6)));
    }
  })().catch(() => undefined);
  return { messages, stop: () => ac.abort() };
}

function mkfifo(file: string): void {
  execFileSync('mkfifo', [file]);
}

describe('the host and a supervisor that dies', () => {
  it('after kill -9 of the supervisor the card ends saying so, a queued card runs, cancel is clean', async () => {
    server = await BoardServer.start(config(1), {
      'long.md': card('Long', 'echo started; sleep 120'),
      'next.md': card('Next', 'echo next'),
    });
    await server.api('POST', '/api/cards/long/move', { to: 'queued', index: 0 });
    const runId = await waitUntil('running', async () => {
      const c = await server!.card('long');
      return c?.column === 'running' && c.runId;
    });
    await server.api('POST', '/api/cards/next/move', { to: 'queued', index: 0 });
    await waitUntil('next waits for the slot', async () => (await server!.card('next'))?.waiting);
    // an inspector following the run's log
    const log = openRunStream(server, runId);
    await waitUntil('the log shows the output', () =>
      log.messages.some((m) => m.type === 'lines' && (m.lines as string[]).includes('started')),
    );

    const pid = await supervisorPid(server);
    process.kill(pid, 'SIGKILL');
    await waitUntil('the supervisor is gone', () => !pidAlive(pid));

    // Cancel right after: never a 500 ("Connection is disposed"); either taken or refused with a reason.
    const cancel = await request(server, 'POST', '/api/cards/long/cancel');
    expect(cancel.status, JSON.stringify(cancel.body)).not.toBe(500);
    if (cancel.status !== 200) expect(cancel.body.error).toMatch(/no run going/);

    const long = await waitUntil(
      'the card ends',
      async () => {
        const c = await server!.card('long');
        return c && c.column !== 'running' ? c : undefined;
      },
      30_000,
    );
    expect(long.column).toBe('failed');
    expect(long.runId).toBe(runId);
    expect(long.lastError).toMatch(/supervisor-died: the supervisor \(pid \d+\) died/);
    expect(long.locked).toBe(false);
    // the log view was told how the run ended, not left hanging
    const end = await waitUntil('the log stream ends', () => log.messages.find((m) => m.type === 'end'));
    log.stop();
    expect((end.result as { termination: { reason: string } }).termination.reason).toBe('supervisor-died');

    // The slot is free again: the queued card runs on a new supervisor.
    await waitUntil('next ran', async () => (await server!.card('next'))?.column === 'done', 30_000);
    expect(await supervisorPid(server)).not.toBe(pid);

    const again = await request(server, 'POST', '/api/cards/long/cancel');
    expect(again.status).toBe(409);
    expect(again.body.error).toMatch(/no run going/);
    // and the failed card can be moved and run again
    await server.api('POST', '/api/cards/long/move', { to: 'backlog', index: 0 });
  });
});

describe('the host and a supervisor that cannot come back at once', () => {
  it('answers 503 saying so while there is none, and carries on once one starts again', async () => {
    // serve starts supervisors from its own copy of dist/, whose supervisor.mjs the test takes away
    const dist = path.join(mkdtempSync(path.join(os.tmpdir(), 'rb-dist-')), 'dist');
    cpSync(DIST, dist, { recursive: true });
    const bundle = path.join(dist, 'supervisor.mjs');
    let said = '';
    const env = { RUNBOARD_DIST: dist, RUNBOARD_NATIVE_DIR: path.join(REPO, 'native', 'build', 'Release') };
    try {
      server = await BoardServer.start(
        config(),
        { 'long.md': card('Long', 'sleep 120'), 'other.md': card('Other', 'echo other') },
        { env },
      );
      const s = server;
      s.proc.stderr!.on('data', (d: Buffer) => (said += d.toString()));
      await s.api('POST', '/api/cards/long/move', { to: 'queued', index: 0 });
      await waitUntil('running', async () => (await s.card('long'))?.runId);
      renameSync(bundle, `${bundle}.away`);
      const pid = await supervisorPid(s);
      process.kill(pid, 'SIGKILL');
      // serve's terminal says so
      await waitUntil('serve noticed', () => said.includes('the connection to the supervisor was lost'));
      // a card queued meanwhile waits for a supervisor; it does not fail
      await s.api('POST', '/api/cards/other/move', { to: 'queued', index: 0 });
      await waitUntil('other waits', async () =>
        /waiting for the supervisor/.test((await s.card('other'))?.waiting ?? ''),
      );
      const cancel = await request(s, 'POST', '/api/cards/long/cancel');
      expect(cancel.status).toBe(503);
      expect(cancel.body.error).toMatch(
        /the supervisor went away and has not come back yet; see .*supervisor\.log/,
      );
      // at once, with why: the supervisor serve started could not (not after waiting 20 s for it)
      expect(cancel.body.error).toMatch(/\(the last try: the supervisor exited with 1 before it served\)/);
      renameSync(`${bundle}.away`, bundle);
      // one starts again (as any command would start it): serve takes it as its socket appears, not
      // at the end of its back-off between tries (up to 30 s), which a loaded machine made a race
      execFileSync(process.execPath, [path.join(dist, 'runboard.mjs'), 'supervisor', 'start'], {
        env: { ...process.env, ...env, RUNBOARD_HOME: s.home },
      });
      const long = await waitUntil('the card ends', async () => {
        const c = await s.card('long');
        return c?.column === 'failed' ? c : undefined;
      });
      expect(long.lastError).toMatch(/supervisor-died/);
      const other = await waitUntil('other ran', async () => {
        const c = await s.card('other');
        return c?.column === 'done' ? c : undefined;
      });
      expect(other.failures).toBeUndefined();
    } catch (err) {
      (err as Error).message += `\nserve's stderr:\n${said}`; // the supervisor's comings and goings
      throw err;
    } finally {
      rmSync(path.dirname(dist), { recursive: true, force: true });
    }
  }, 90_000);
});

describe('cards/ entries that are not regular files', () => {
  it('a directory and a FIFO named *.md at start show as broken cards, and the board works', async () => {
    server = await BoardServer.start(
      config(),
      { 'ok.md': card('Ok', 'echo ok') },
      {
        beforeServe: (paths) => {
          // the project sits beside the state root (BoardServer's layout)
          const cards = path.join(path.dirname(paths.root), 'project', 'cards');
          mkdirSync(path.join(cards, 'dir.md'));
          mkfifo(path.join(cards, 'pipe.md'));
        },
      },
    );
    const board = await server.board();
    const dir = board.cards.find((c) => c.file === path.join('cards', 'dir.md'));
    const fifo = board.cards.find((c) => c.file === path.join('cards', 'pipe.md'));
    expect(dir?.broken).toMatch(/directory/);
    expect(fifo?.broken).toMatch(/FIFO/);
    expect(dir?.title).toBe('dir.md');
    await server.api('POST', '/api/cards/ok/move', { to: 'queued', index: 0 });
    await waitUntil('ok ran', async () => (await server!.card('ok'))?.column === 'done');
  });

  it('a directory and five FIFOs added while serving show as broken cards and stall nothing', async () => {
    server = await BoardServer.start(config(), { 'ok.md': card('Ok', 'echo ok') });
    const s = server;
    mkdirSync(s.cardFile('later.md'));
    for (let i = 0; i < 5; i++) mkfifo(s.cardFile(`fifo${i}.md`));
    const broken = await waitUntil('six broken cards', async () => {
      const cards = (await s.board()).cards.filter((c) => c.broken);
      return cards.length === 6 ? cards : undefined;
    });
    expect(broken.find((c) => c.title === 'later.md')?.broken).toMatch(/directory/);
    for (const c of broken.filter((b) => b.title.startsWith('fifo'))) expect(c.broken).toMatch(/FIFO/);
    // static files (read on libuv's thread pool) still come
    const res = await fetch(`${s.base}/app.js`, {
      headers: { authorization: `Bearer ${s.token}` },
      signal: AbortSignal.timeout(15_000),
    });
    expect(res.status).toBe(200);
    expect((await res.text()).length).toBeGreaterThan(1000);
    await s.api('POST', '/api/cards/ok/move', { to: 'queued', index: 0 });
    await waitUntil('ok ran', async () => (await s.card('ok'))?.column === 'done');
    // and they go when removed
    rmSync(s.cardFile('later.md'), { recursive: true });
    for (let i = 0; i < 5; i++) unlinkSync(s.cardFile(`fifo${i}.md`));
    await waitUntil('no broken cards', async () => !(await s.board()).cards.some((c) => c.broken));
  });
});

describe('a card hand-edited to running', () => {
  it('with no run going is put right, says why, and can be moved and run', async () => {
    server = await BoardServer.start(config(), { 'edit.md': card('Edited', 'echo edited') });
    const s = server;
    await waitUntil('loaded', async () => (await s.card('edit'))?.column === 'backlog');
    s.writeCard('edit.md', card('Edited', 'echo edited', 'id: edit\nstatus: running\n'));
    const fixed = await waitUntil('put right', async () => {
      const c = await s.card('edit');
      return c && c.column !== 'running' && c.column !== 'backlog' ? c : undefined;
    });
    expect(fixed.column).toBe('failed');
    expect(fixed.locked).toBe(false);
    expect(fixed.lastError).toMatch(/no run/);
    await s.api('POST', '/api/cards/edit/move', { to: 'queued', index: 0 });
    await waitUntil('ran', async () => (await s.card('edit'))?.column === 'done');
  });

  it('found so at start (no run of it ever recorded) is put right too', async () => {
    server = await BoardServer.start(config(), {
      'stray.md': card('Stray', 'echo stray', 'id: stray\nstatus: running\n'),
    });
    const c = await server.card('stray');
    expect(c?.column).toBe('failed');
    expect(c?.lastError).toMatch(/no run/);
    await server.api('POST', '/api/cards/stray/move', { to: 'backlog', index: 0 });
  });
});

describe('backoff', () => {
  it('a missing key is no failure: the card waits for the key, without backoff, and starts once it is set', async () => {
    const keyed = (title: string): string =>
      `---\ntitle: ${title}\nflow: keyed\nworkspace: ./workspace\ncommand: "echo ${title}"\n---\n`;
    server = await BoardServer.start(
      'version: 1\nscheduler:\n  backoff: { base: 1s, retries: 3 }\nflows:\n  keyed: { runner: command, cap: 2, provider: openai }\n',
      { 'first.md': keyed('first'), 'second.md': keyed('second') },
    );
    const s = server;
    await s.api('POST', '/api/cards/first/move', { to: 'queued', index: 0 });
    const first = await waitUntil('first waits for the key', async () => {
      const c = await s.card('first');
      return c?.column === 'queued' && /key/.test(c.waiting ?? '') ? c : undefined;
    });
    expect(first.waiting).toMatch(/openai/);
    expect(first.failures).toBeUndefined();
    expect(first.nextTryAt).toBeUndefined();
    await s.api('POST', '/api/cards/second/move', { to: 'queued', index: 1 });
    await waitUntil('second waits too', async () => /key/.test((await s.card('second'))?.waiting ?? ''));
    // waiting, not retrying: one refused run of the first card, none of the second
    const runsOf = async (id: string) =>
      (
        await s.api<{ runs: { runId: string; termination: { reason: string } | null }[] }>(
          'GET',
          `/api/cards/${id}`,
        )
      ).runs;
    expect((await runsOf('first')).map((r) => r.termination?.reason)).toEqual(['missing-key']);
    expect(await runsOf('second')).toEqual([]);

    await new Promise<void>((resolve, reject) => {
      const p = execFile(
        process.execPath,
        [path.join(DIST, 'runboard.mjs'), 'key', 'set', 'openai'],
        { env: { ...process.env, RUNBOARD_HOME: s.home } },
        (err) => (err ? reject(err) : resolve()),
      );
      p.stdin!.end('sk-test-openai-0123456789\n');
    });
    for (const id of ['first', 'second'])
      await waitUntil(`${id} ran`, async () => (await s.card(id))?.column === 'done', 30_000);
    expect(await runsOf('first')).toHaveLength(2);
  });

  it('a card queued again by hand starts afresh: no wait for the backoff, failures counted anew', async () => {
    server = await BoardServer.start(shellConfig('  backoff: { base: 5m, retries: 0 }\n'), {
      'flaky.md': card('Flaky', 'echo no; exit 3'),
    });
    const s = server;
    const runs = async () =>
      (await s.api<{ runs: { runId: string }[] }>('GET', '/api/cards/flaky')).runs.length;
    await s.api('POST', '/api/cards/flaky/move', { to: 'queued', index: 0 });
    const failed = await waitUntil('failed', async () => {
      const c = await s.card('flaky');
      return c?.column === 'failed' ? c : undefined;
    });
    expect(failed.failures).toBe(1);
    expect(failed.nextTryAt).toBeDefined(); // 5 minutes away
    await s.api('POST', '/api/cards/flaky/move', { to: 'queued', index: 0 });
    // it runs now, not in 5 minutes, and fails as its first failure again
    const again = await waitUntil('ran again', async () => {
      const c = await s.card('flaky');
      return c?.column === 'failed' && (await runs()) === 2 ? c : undefined;
    });
    expect(again.failures).toBe(1);
  });
});
