// Kept trees (desktop.keepTrees, what `observe` and `serve` turn on): the first read of a window loads
// its tree whole, later reads re-read only what AT-SPI events named since. Real apps on a test desktop
// of this file's own: the GTK form (kept: a change must show in a read served from the kept tree, and
// agree with a whole read) and a Chromium page (not kept: its page content sends no events).
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desktop, type Element, type ReadResult } from '../../native/src/index.ts';
import { allElements } from '../../native/src/desktop/compact.ts';
import { DesktopSession, eventually, formApp } from './session.ts';

const TITLE = 'Runboard Kept Form';
const PAGE_TITLE = 'Runboard Test Page - Chromium';
let s: DesktopSession;

beforeAll(async () => {
  s = await DesktopSession.start();
  await s.startForm(TITLE);
  await desktop.keepTrees(true);
}, 60_000);

afterAll(async () => {
  await desktop.keepTrees(false);
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
});

const read = (title: string) => desktop.read({ title, visibleOnly: false });
const els = (r: ReadResult) => allElements(r.elements);
/** What a read says of each element, bounds and focus aside (they move without events, and are re-read). */
const shape = (r: ReadResult) =>
  els(r).map((e: Element) => [
    e.id,
    e.role,
    e.name,
    e.visible,
    e.enabled,
    e.checked,
    e.value ?? '',
    e.actions,
  ]);

/** The same window read whole (kept trees off for one read). */
async function whole(title: string): Promise<ReadResult> {
  await desktop.keepTrees(false);
  try {
    const r = await read(title);
    expect(r.stats.kept).toBe(false);
    return r;
  } finally {
    await desktop.keepTrees(true);
  }
}

/** Reads until a read served from the kept tree shows what `seen` looks for. */
async function keptReadShowing(
  title: string,
  seen: (r: ReadResult) => boolean,
  timeoutMs = 10_000,
): Promise<ReadResult> {
  let last: ReadResult | undefined;
  const ok = await eventually(async () => {
    last = await read(title).catch(() => undefined); // (a window still starting)
    return last !== undefined && last.stats.kept === true && seen(last);
  }, timeoutMs);
  expect(ok, `no kept read showed it; last: ${JSON.stringify(last && [last.stats, shape(last)])}`).toBe(true);
  return last!;
}

describe('kept trees', () => {
  it('GTK: a second read of an unchanged window is kept and re-reads nothing', async () => {
    const first = await read(TITLE);
    const second = await read(TITLE);
    expect(second.stats.kept).toBe(true);
    expect(second.stats.refreshed, 'nothing re-read for events (the tree view is walked again)').toBe(0);
    expect(shape(second)).toEqual(shape(first));
  });

  it('GTK: a change in the app (a check box shows a field, a label changes) shows in the next kept read', async () => {
    const before = await read(TITLE);
    expect(els(before).some((e) => e.name === 'Newsletter' && e.visible)).toBe(false);
    const box = els(before).find((e) => e.role === 'check box' && e.name === 'Subscribe')!;
    await desktop.doAction({ title: TITLE }, box.id);
    const after = await keptReadShowing(
      TITLE,
      (r) =>
        els(r).some((e) => e.name === 'Newsletter' && e.visible) &&
        els(r).some((e) => e.role === 'label' && e.name === 'subscribe on'),
    );
    expect(after.stats.refreshed).toBeGreaterThan(0);
    expect(els(after).find((e) => e.role === 'check box' && e.name === 'Subscribe')!.checked).toBe(true);
    expect(shape(after)).toEqual(shape(await whole(TITLE)));
  });

  it('a window that vanished is reported as gone; a new one of the same title is read whole', async () => {
    const title = 'Runboard Kept Gone';
    const start = () =>
      spawn('/usr/bin/python3', [formApp, '--title', title], { env: s.env, stdio: 'ignore' });
    const child = start();
    try {
      await eventually(async () => (await read(title).catch(() => undefined)) !== undefined, 20_000);
      expect((await read(title)).stats.kept).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
    const gone = await eventually(
      async () => (await read(title).catch((e: { code?: string }) => e.code)) === 'APP_NOT_FOUND',
      10_000,
    );
    expect(gone, 'the read says the window is not found').toBe(true);
    const again = start();
    try {
      const fresh = await eventually(async () => read(title).catch(() => undefined), 20_000);
      expect(fresh?.stats.kept, 'a new window is loaded whole').toBe(false);
    } finally {
      again.kill('SIGKILL');
    }
  });

  it('Chromium: its page content sends no events, so its tree is read whole at every read, and a change shows', async () => {
    s.spawnTestPage();
    // Read while the page loads, as an agent would: a kept tree would miss the page (Chromium fills and
    // changes its document without the events a kept tree follows), so Chromium's trees are not kept.
    let last: ReadResult | undefined;
    const loaded = await eventually(async () => {
      last = await read(PAGE_TITLE).catch(() => undefined);
      return last !== undefined && els(last).some((e) => e.role === 'link' && e.name === 'Item 60');
    }, 60_000);
    expect(loaded, 'the page is read whole once loaded').toBe(true);
    expect(last!.stats.kept).toBe(false);
    // (ids as click --id and actions read them: visible objects only)
    const visible = await desktop.read({ title: PAGE_TITLE });
    const go = els(visible).find((e) => e.role === 'push button' && e.name === 'Go')!;
    const done = await desktop.doAction({ title: PAGE_TITLE }, go.id);
    const pressed = await eventually(async () => {
      last = await read(PAGE_TITLE);
      return !last.stats.kept && els(last).some((e) => e.name === 'pressed 1');
    }, 10_000);
    expect(
      pressed,
      `the change is read (${done} on ${go.id}): ${JSON.stringify(
        els(last!)
          .filter((e) => /idle|pressed/.test(e.name + (e.value ?? '')))
          .map((e) => [e.id, e.role, e.name, e.value]),
      )}`,
    ).toBe(true);
    expect(last!.stats.nodes).toBeGreaterThan(400);
  }, 90_000);
});
