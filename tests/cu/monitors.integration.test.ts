/**
 * A real two-monitor X layout: Xorg with the dummy video driver and two RandR outputs side by side
 * (1280x1024 on the left, 1024x768 on the right: different sizes, so the right one's bottom edge is not
 * the screen's). The model sees only the right monitor, on a downscaled image, and its click must land on
 * the button it names; the addon reports the monitors as the server does.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { desktop } from '../../native/src/index.ts';
import { hudPixels } from '../desktop/session.ts';
import { act, CuHarness, cuEvents, find, final, imagePoint } from './cu-harness.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start({ monitors: ['1280x1024', '1024x768'] });
});
afterEach(async () => {
  await t.closeForms();
});
afterAll(async () => {
  await t?.stop();
});

describe('two monitors (RandR outputs)', () => {
  it('the addon and desktop-cli list both monitors with their bounds, the first one primary', async () => {
    expect(await desktop.listMonitors()).toEqual([
      { name: 'DUMMY0', bounds: [0, 0, 1280, 1024], primary: true },
      { name: 'DUMMY1', bounds: [1280, 0, 1024, 768], primary: false },
    ]);
    // and desktop-cli, for agents that drive the desktop themselves
    expect(t.session!.run(['list', '--monitors']).json).toEqual([
      { name: 'DUMMY0', bounds: [0, 0, 1280, 1024], primary: true },
      { name: 'DUMMY1', bounds: [1280, 0, 1024, 768] },
    ]);
  });

  it('a click on a downscaled image of the second monitor lands on the button named, not its neighbour', async () => {
    const title = 'CU Second Monitor';
    await t.startForm(title, {}, ['--x', '1500', '--y', '300']);
    const submit = await find(title, (e) => e.role === 'push button' && e.name === 'Submit');
    const clear = await find(title, (e) => e.role === 'push button' && e.name === 'Clear');
    expect(submit.bounds[0]).toBeGreaterThanOrEqual(1280); // the window is on the right monitor
    // The right monitor (1024 px wide at x 1280) is sent 512 px wide: scale 0.5, origin (1280, 0).
    const p = imagePoint(submit.bounds, 0.5, [1280, 0]);
    t.episodes([
      {
        name: 'second-monitor',
        match: 'CU-MONITOR',
        turns: [
          act({ action: 'left_click', ...p }),
          final({ status: 'SUCCESS', summary: 'pressed', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('monitor', 'CU-MONITOR press Submit'),
      t.flow({}, { monitor: 'DUMMY1', imageMaxWidth: 512 }),
    );
    expect(rec.result.status).toBe('succeeded');
    expect(cuEvents(rec, 'cu-screenshot')[0]).toMatchObject({
      width: 512,
      height: 384,
      source: [1280, 0, 1024, 768],
    });
    const at = cuEvents(rec, 'cu-step')[0]!.screen as { x: number; y: number };
    expect(at.x).toBeGreaterThanOrEqual(submit.bounds[0]);
    expect(at.x).toBeLessThan(submit.bounds[0] + submit.bounds[2]);
    expect(at.x).toBeLessThan(clear.bounds[0]);
    expect(at.y).toBeGreaterThanOrEqual(submit.bounds[1]);
    expect(at.y).toBeLessThan(submit.bounds[1] + submit.bounds[3]);
    await find(title, (e) => e.role === 'label' && e.name === 'clicked Submit 1');
  });

  it('the takeover HUD shows on the monitor the run acts on, not on the primary one', async () => {
    // The HUD's colour counted in the top 40 rows of each monitor.
    t.episodes([{ name: 'hud', match: 'CU-MON-HUD', turns: [{ hang: true }] }]);
    const next = t.model.nextRequest('hud');
    const { runId } = await t.launch(t.card('hud', 'CU-MON-HUD'), t.flow({}, { monitor: 'DUMMY1' }));
    await next; // the run is going (waiting for the model): the HUD is up
    expect(await hudPixels([1280, 0, 1024, 40])).toBeGreaterThan(300 * 20);
    expect(await hudPixels([0, 0, 1280, 40])).toBe(0);
    await t.h.client.cancel(runId);
    expect((await t.h.collect(runId)).result.status).toBe('cancelled');
  });

  it('a monitor the display does not have fails the run at once, listing the monitors it has', async () => {
    const before = t.model.requests.length;
    const rec = await t.run(t.card('no monitor', 'CU-NOMON'), t.flow({}, { monitor: 2 }));
    expect(rec.result.status).toBe('failed');
    expect(rec.result.summary).toContain('computerUse.monitor 2 is not on this display');
    expect(rec.result.summary).toContain('1: DUMMY1 1024x768+1280+0');
    expect(t.model.requests.length).toBe(before); // nothing was sent to the model
  });
});
