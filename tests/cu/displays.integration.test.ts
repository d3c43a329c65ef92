/**
 * Private virtual displays: the supervisor starts Xvfb + D-Bus + AT-SPI + openbox and the card's app
 * for each run, hands the display to the worker, and tears it all down at the end, also when the
 * supervisor itself is killed. Two runs at once on two displays, each pressing Submit in its own app.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolOutputs, type TurnFn } from '../fixtures/model-server/server.ts';
import { processesMentioning, waitUntil } from '../helpers/harness.ts';
import { startBareXvfb } from '../helpers/xvfb.ts';
import { act, CuHarness, cuEvents, final, formApp } from './cu-harness.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start({ desktop: false });
});
afterAll(async () => {
  await t?.stop();
});

/** The scripted model clicks the centre of the element named `name` in the last desktop_read. */
const clickFromTree =
  (name: string): TurnFn =>
  ({ api, body }) => {
    const out = toolOutputs(api, body).at(-1)!;
    const tree = JSON.parse(out) as { elements?: unknown };
    if (!Array.isArray(tree.elements))
      return final({ status: 'FAILED', summary: 'no tree', error: out, questions: [] });
    const flat: { t?: string; b: number[]; c?: unknown[] }[] = [];
    const walk = (els: { t?: string; b: number[]; c?: unknown[] }[]): void => {
      for (const e of els) {
        flat.push(e);
        if (e.c) walk(e.c as never);
      }
    };
    walk(tree.elements as never);
    const b = flat.find((e) => e.t === name)!.b;
    return act({ action: 'left_click', x: b[0]! + b[2]! / 2, y: b[1]! + b[3]! / 2 });
  };

const episode = (marker: string, title: string) => ({
  name: marker,
  match: marker,
  turns: [
    { toolCalls: [{ name: 'desktop_read', arguments: { title } }] },
    clickFromTree('Submit'),
    { toolCalls: [{ name: 'desktop_read', arguments: { title } }] },
    final({ status: 'SUCCESS', summary: 'submitted', error: '', questions: [] }),
  ],
});

const privateFlow = (title: string) =>
  t.flow(
    { sandbox: {} }, // abstract unix sockets stay scoped: the private Xvfb listens on its path socket only
    {
      privateDisplay: true,
      displaySize: '1024x768x24',
      app: ['/usr/bin/python3', formApp, '--title', title],
    },
  );

describe('private displays', () => {
  it('two runs at once, each on its own display with its own app, torn down after', async () => {
    t.episodes([episode('CU-PRIV-A', 'Private A'), episode('CU-PRIV-B', 'Private B')]);
    const [a, b] = await Promise.all([
      t.launch(t.card('a', 'CU-PRIV-A press Submit'), privateFlow('Private A')),
      t.launch(t.card('b', 'CU-PRIV-B press Submit'), privateFlow('Private B')),
    ]);
    const [ra, rb] = await Promise.all([t.h.collect(a.runId), t.h.collect(b.runId)]);
    const displays: string[] = [];
    for (const rec of [ra, rb]) {
      expect(rec.result.status, JSON.stringify(rec.result.termination) + rec.stderr).toBe('succeeded');
      const steps = cuEvents(rec, 'cu-step');
      // The app's state as the worker read it through AT-SPI on its own display.
      expect(JSON.stringify(steps[2]!.result)).toContain('clicked Submit 1');
      const shot = cuEvents(rec, 'cu-screenshot')[0]!;
      expect(shot.source).toEqual([0, 0, 1024, 768]);
      const disp = cuEvents(rec, 'display')[0]!;
      displays.push(disp.display as string);
      expect(cuEvents(rec, 'display-teardown')).toHaveLength(1);
      expect(rec.result.metrics.displayStartMs).toEqual(expect.any(Number));
      // the live view wrote frames while the run ran; only the step screenshots are left
      expect(rec.result.metrics.liveFrames).toBeGreaterThanOrEqual(1);
      expect(cuEvents(rec, 'cu-live')).toHaveLength(1);
      expect(existsSync(path.join(rec.result.logDir, 'artifacts', 'live.jpg'))).toBe(false);
      expect(existsSync(path.join(rec.result.logDir, 'artifacts', 'step-000.jpg'))).toBe(true);
      expect(existsSync(`/tmp/.X11-unix/X${(disp.display as string).slice(1)}`)).toBe(false);
    }
    expect(displays[0]).not.toBe(displays[1]);
    // They overlapped in time.
    const span = (r: typeof ra) => [Date.parse(r.result.startedAt), Date.parse(r.result.endedAt!)];
    const [a0, a1] = span(ra);
    const [b0, b1] = span(rb);
    expect(a0! < b1! && b0! < a1!).toBe(true);
  });

  it("a run on its own display cannot reach the user's display or session bus", async () => {
    // "The user's display": an X server with the usual sockets (path + abstract), and a runtime dir with a
    // session bus socket in it, as a desktop session has.
    const userTmp = mkdtempSync(path.join(os.tmpdir(), 'runboard-user-session-'));
    const runtime = path.join(userTmp, 'run-user');
    const { xvfb, display: userDisplay } = await startBareXvfb();
    mkdirSync(runtime, { mode: 0o700 });
    const bus = spawn('dbus-daemon', ['--session', '--nofork', `--address=unix:path=${runtime}/bus`], {
      stdio: 'ignore',
    });
    // A supervisor started from that session (XDG_RUNTIME_DIR set, as a desktop session sets it).
    const u = await CuHarness.start({ desktop: false, env: { XDG_RUNTIME_DIR: runtime } });
    try {
      await waitUntil('the session bus', () => existsSync(`${runtime}/bus`), 10_000);
      const probe = [
        'ls -A /tmp/.X11-unix',
        `xdpyinfo -display ${userDisplay} >/dev/null 2>&1 && echo USER-DISPLAY-REACHED || echo USER-DISPLAY-REFUSED`,
        'xdpyinfo >/dev/null 2>&1 && echo OWN-DISPLAY-OK',
        `ls -A ${runtime} 2>&1 | grep -q bus && echo USER-BUS-VISIBLE || echo USER-BUS-HIDDEN`,
        // and it cannot take the cover off
        'umount /tmp/.X11-unix 2>/dev/null && echo UNMOUNTED || echo UMOUNT-REFUSED',
      ].join('; ');
      u.episodes([
        {
          name: 'isolated',
          match: 'CU-PRIV-ISOLATED',
          turns: [
            { toolCalls: [{ name: 'terminal_exec', arguments: { command: probe, shell: true } }] },
            final({ status: 'SUCCESS', summary: 'probed', error: '', questions: [] }),
          ],
        },
      ]);
      const flow = u.flow(
        { sandbox: { allowAbstractUnix: true } }, // not given next to a private display: X listens on one
        { privateDisplay: true, displaySize: '800x600x24' },
      );
      const rec = await u.run(u.card('isolated', 'CU-PRIV-ISOLATED'), flow);
      expect(rec.result.status, JSON.stringify(rec.result.termination) + rec.stderr).toBe('succeeded');
      const stdout = (cuEvents(rec, 'cu-step')[0]!.result as { stdout: string }).stdout;
      const own = (cuEvents(rec, 'display')[0]!.display as string).slice(1);
      expect(stdout).toBe(`X${own}\nUSER-DISPLAY-REFUSED\nOWN-DISPLAY-OK\nUSER-BUS-HIDDEN\nUMOUNT-REFUSED\n`);
      // Outside a jail the same display answers: the test's "user session" is real.
      expect(spawnSync('xdpyinfo', ['-display', userDisplay], { encoding: 'utf8' }).stdout).toContain(
        'name of display',
      );
    } finally {
      xvfb.kill();
      bus.kill();
      await u.stop();
      rmSync(userTmp, { recursive: true, force: true });
    }
  });

  it('the live frame is there while a run is going, and gone after its worker was killed', async () => {
    t.episodes([{ name: 'stuck', match: 'CU-PRIV-STUCK', turns: [{ hang: true }] }]);
    const next = t.model.nextRequest('stuck');
    const { runId, logDir } = await t.launch(t.card('stuck', 'CU-PRIV-STUCK'), privateFlow('Private Stuck'));
    await next; // the worker waits for the model: the live view keeps going meanwhile
    const frame = path.join(logDir, 'artifacts', 'live.jpg');
    await waitUntil('a live frame', () => existsSync(frame), 10_000);
    expect(readFileSync(frame).subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8])); // a JPEG
    // A worker killed outright cannot remove its frame: the supervisor does, at the run's end.
    const { runs } = await t.h.client.list({ activeOnly: true });
    const pid = runs.find((r) => r.runId === runId)!.pid!;
    process.kill(pid, 'SIGKILL');
    const rec = await t.h.collect(runId);
    expect(rec.result.status).not.toBe('running');
    expect(existsSync(frame)).toBe(false);
    expect(existsSync(path.join(logDir, 'artifacts', 'step-000.jpg'))).toBe(true);
  });

  it('a supervisor killed with SIGKILL takes the private display with it', async () => {
    t.episodes([{ name: 'crash', match: 'CU-PRIV-CRASH', turns: [{ hang: true }] }]);
    const next = t.model.nextRequest('crash');
    await t.launch(t.card('crash', 'CU-PRIV-CRASH'), privateFlow('Private Crash'));
    await next; // the run is going: the display is up, the worker waits for the model
    const xvfb = (): number[] =>
      processesMentioning(t.h.root).filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('Xvfb');
        } catch {
          return false;
        }
      });
    expect(xvfb().length).toBe(1);
    // Its one socket is a path socket (no abstract one), and it is listening.
    const display = readFileSync('/proc/net/unix', 'utf8').match(/ \/tmp\/\.X11-unix\/X(1\d\d)\n/g);
    expect(display?.length).toBeGreaterThanOrEqual(1);
    t.h.supervisor.kill('SIGKILL');
    await waitUntil('the display stack is gone', () => processesMentioning(t.h.root).length === 0, 10_000);
    await t.h.startSupervisor(); // a new supervisor records the orphaned run

    // A killed Xvfb leaves its lock file and socket behind; a display nobody listens on any more is
    // cleared and its number reused by the next supervisor. The stale pair goes at the lowest number the
    // supervisor would try that nothing uses now (other test files may run private displays meanwhile:
    // their live numbers are not ours to touch).
    let stale = 100;
    while (existsSync(`/tmp/.X${stale}-lock`) || existsSync(`/tmp/.X11-unix/X${stale}`)) stale++;
    writeFileSync(`/tmp/.X${stale}-lock`, '       999\n');
    writeFileSync(`/tmp/.X11-unix/X${stale}`, '');
    t.episodes([episode('CU-PRIV-AGAIN', 'Private Again')]);
    const again = await t.run(t.card('again', 'CU-PRIV-AGAIN press Submit'), privateFlow('Private Again'));
    expect(again.result.status, JSON.stringify(again.result.termination)).toBe('succeeded');
    // Not skipped as taken: the run got that number or a lower one freed meanwhile, and the stale lock is gone.
    expect(Number((cuEvents(again, 'display')[0]!.display as string).slice(1))).toBeLessThanOrEqual(stale);
    expect(
      existsSync(`/tmp/.X${stale}-lock`) && readFileSync(`/tmp/.X${stale}-lock`, 'utf8').trim() === '999',
    ).toBe(false);
    // Leave no stale files of the killed display behind on this machine.
    for (const m of display ?? []) {
      const n = m.trim().slice('/tmp/.X11-unix/X'.length);
      if (!readFileSync('/proc/net/unix', 'utf8').includes(m))
        for (const f of [`/tmp/.X${n}-lock`, `/tmp/.X11-unix/X${n}`]) rmSync(f, { force: true });
    }
  });
});
