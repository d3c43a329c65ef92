/**
 * The computer-use loop end to end: real supervisor, real worker in its jail, the real OpenAI SDK
 * against the scripted model server through the supervisor's proxy, real X input and AT-SPI on the
 * GTK form app in the test desktop. The app's state is read back through its accessibility tree.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { desktop } from '../../native/src/index.ts';
import { toolOutputs } from '../fixtures/model-server/server.ts';
import { act, artifact, type CuHarness, cuEvents, find, final, imagePoint } from './cu-harness.ts';
import { useCuHarness } from './use-harness.ts';

let t: CuHarness;
useCuHarness((h) => (t = h));

describe('computer-use loop (OpenAI Responses)', () => {
  it('fills the form and presses Submit; every step is an event; report and screenshots are written', async () => {
    const title = 'CU Form Fill';
    await t.startForm(title);
    // What a model would read off the 640-px screenshot of the 1280-px screen (scale 0.5).
    const name = await find(title, (e) => e.role === 'text' && e.name === 'Name');
    const email = await find(title, (e) => e.role === 'text' && e.name === 'Email');
    const submit = await find(title, (e) => e.role === 'push button' && e.name === 'Submit');
    t.episodes([
      {
        name: 'fill',
        match: 'CU-FILL-MARKER',
        turns: [
          { toolCalls: [{ name: 'desktop_read', arguments: { title } }] },
          act({ action: 'left_click', ...imagePoint(name.bounds, 0.5) }),
          act({ action: 'type', text: 'Ada Lovelace' }),
          act({ action: 'left_click', ...imagePoint(email.bounds, 0.5) }),
          act({ action: 'type', text: 'ada@example.com' }),
          act({ action: 'wait' }),
          act({ action: 'left_click', ...imagePoint(submit.bounds, 0.5) }),
          final({ status: 'SUCCESS', summary: 'form submitted', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('Fill the form', 'CU-FILL-MARKER Put Ada Lovelace / ada@example.com in the form and submit.'),
      t.flow(),
    );
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    // The app's state, through its accessibility tree.
    expect((await find(title, (e) => e.name === 'Name' && e.role === 'text')).value).toBe('Ada Lovelace');
    expect((await find(title, (e) => e.name === 'Email' && e.role === 'text')).value).toBe('ada@example.com');
    await find(title, (e) => e.role === 'label' && e.name === 'clicked Submit 1');

    const steps = cuEvents(rec, 'cu-step');
    expect(steps.map((s) => s.action)).toEqual([
      'desktop_read',
      'left_click',
      'type',
      'left_click',
      'type',
      'wait',
      'left_click',
    ]);
    // desktop_read gave the tree with bounds in screenshot pixels.
    const read = steps[0]!.result as { ok: boolean; elements: unknown; coordinates: string };
    expect(read.ok).toBe(true);
    expect(JSON.stringify(read.elements)).toContain('"t":"Submit"');
    for (const s of steps) {
      expect(s.screenshot).toMatch(/^step-\d{3}\.jpg$/);
      expect(existsSync(path.join(rec.result.logDir, 'artifacts', s.screenshot as string))).toBe(true);
      expect(s.timings).toMatchObject({ modelMs: expect.any(Number), toolMs: expect.any(Number) });
      expect(s.tokens).toEqual({ input: 100, output: 10 });
    }
    // The wait defaulted to 0.5 s.
    expect(steps[5]!.result).toMatchObject({ waited: 0.5 });
    // The click landed at the element's centre in screen pixels (mapped back from the 640-px image).
    const click = steps[6]!.screen as { x: number; y: number };
    expect(click.x).toBeGreaterThanOrEqual(submit.bounds[0]);
    expect(click.x).toBeLessThan(submit.bounds[0] + submit.bounds[2]);
    // Screenshots: downscaled to 640 px wide; only the latest image in each request.
    const reqs = t.model.requests.filter((r) => r.episode === 'fill');
    expect(reqs).toHaveLength(8);
    for (const r of reqs) {
      const body = JSON.stringify(r.body);
      expect(body.match(/"type":"input_image"/g)).toHaveLength(1);
      expect(r.headers.authorization).toBe('Bearer sk-test-openai-0123456789');
    }
    // Metrics and the report.
    const m = rec.result.metrics;
    expect(m).toMatchObject({ api: 'responses', steps: 8, toolCalls: 7, inputTokens: 800, outputTokens: 80 });
    expect(m.estimatedCostUsd).toBeCloseTo((800 * 1.25 + 80 * 10) / 1e6, 9);
    expect(m.imageBytesMax as number).toBeLessThanOrEqual(1_000_000);
    const report = artifact(rec, 'report.md')!;
    expect(report).toContain('Status: **succeeded**');
    expect(report).toContain('| 7 | desktop_action |');
    expect(statSync(path.join(rec.result.logDir, 'artifacts', 'step-000.jpg')).size).toBeGreaterThan(1000);
  });
});

describe('coordinates from a downscaled screenshot', () => {
  it('a click given on a downscaled image of one monitor (offset region) lands on the right button', async () => {
    const title = 'CU Offset Monitor';
    await t.startForm(title, {}, ['--x', '700', '--y', '60']);
    const submit = await find(title, (e) => e.role === 'push button' && e.name === 'Submit');
    const clear = await find(title, (e) => e.role === 'push button' && e.name === 'Clear');
    // The "monitor" is the right half of the screen (x 640..1279), sent 320 px wide (scale 0.5).
    const p = imagePoint(submit.bounds, 0.5, [640, 0]);
    t.episodes([
      {
        name: 'offset',
        match: 'CU-OFFSET',
        turns: [
          act({ action: 'left_click', ...p }),
          final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('offset', 'CU-OFFSET press Submit'),
      t.flow({}, { region: [640, 0, 640, 800], imageMaxWidth: 320 }),
    );
    expect(rec.result.status).toBe('succeeded');
    const shot = cuEvents(rec, 'cu-screenshot')[0]!;
    expect(shot).toMatchObject({ width: 320, height: 400, source: [640, 0, 640, 800] });
    const at = cuEvents(rec, 'cu-step')[0]!.screen as { x: number; y: number };
    expect(at.x).toBeGreaterThanOrEqual(submit.bounds[0]);
    expect(at.x).toBeLessThan(submit.bounds[0] + submit.bounds[2]);
    expect(at.x).toBeLessThan(clear.bounds[0]); // not the neighbour
    await find(title, (e) => e.role === 'label' && e.name === 'clicked Submit 1');
  });

  it('cursor_position reports the real pointer (whoever moved it) in the pixels of the image sent', async () => {
    const done = final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] });
    t.episodes([
      {
        name: 'cursor',
        match: 'CU-CURSOR',
        turns: [
          act({ action: 'cursor_position' }),
          act({ action: 'mouse_move', x: 20, y: 30 }),
          act({ action: 'cursor_position' }),
          done,
        ],
      },
      { name: 'cursor-off', match: 'CU-CURSOR-OFF', turns: [act({ action: 'cursor_position' }), done] },
    ]);
    // Someone else (this test process, not the run) puts the pointer on the right half …
    await desktop.move(900, 700);
    const flow = t.flow({}, { region: [640, 0, 640, 800], imageMaxWidth: 320 }); // the right half at scale 0.5
    const rec = await t.run(t.card('cursor', 'CU-CURSOR where is the pointer'), flow);
    expect(rec.result.status).toBe('succeeded');
    const r = cuEvents(rec, 'cu-step').map((s) => s.result);
    expect(r[0]).toEqual({ ok: true, x: (900 - 640) / 2, y: 700 / 2, onScreenshot: true });
    // … the agent's own move, read back: image (20, 30) → screen (681, 61) → image (20, 30).
    expect(cuEvents(rec, 'cu-step')[1]!.screen).toEqual({ x: 681, y: 61 });
    expect(r[2]).toEqual({ ok: true, x: 20, y: 30, onScreenshot: true });
    // A pointer on the left half (off the captured "monitor"): the nearest edge, and it says so.
    await desktop.move(100, 100);
    const off = await t.run(t.card('cursor-off', 'CU-CURSOR-OFF where is the pointer'), flow);
    expect(cuEvents(off, 'cu-step')[0]!.result).toEqual({ ok: true, x: 0, y: 50, onScreenshot: false });
  });

  it('on a HiDPI app (GDK_SCALE=2) a model that grounds on desktop_read clicks the right button', async () => {
    const title = 'CU HiDPI';
    await t.startForm(title, { GDK_SCALE: '2' });
    t.episodes([
      {
        name: 'hidpi',
        match: 'CU-HIDPI',
        turns: [
          { toolCalls: [{ name: 'desktop_read', arguments: { title } }] },
          // The scripted model reads the tree it was given (bounds in screenshot pixels) and clicks Submit's centre.
          ({ api, body }) => {
            const tree = JSON.parse(toolOutputs(api, body).at(-1)!) as { elements: unknown };
            const flat: { t?: string; r: string; b: number[] }[] = [];
            const walk = (els: { c?: unknown[] }[]): void => {
              for (const e of els) {
                flat.push(e as never);
                if (e.c) walk(e.c as { c?: unknown[] }[]);
              }
            };
            walk(tree.elements as { c?: unknown[] }[]);
            const b = flat.find((e) => e.t === 'Submit' && e.r === 'btn')!.b;
            return act({ action: 'left_click', x: b[0]! + b[2]! / 2, y: b[1]! + b[3]! / 2 });
          },
          final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(t.card('hidpi', 'CU-HIDPI press Submit'), t.flow({}, { imageMaxWidth: 800 }));
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    const submit = await find(title, (e) => e.role === 'push button' && e.name === 'Submit');
    const at = cuEvents(rec, 'cu-step')[1]!.screen as { x: number; y: number };
    expect(at.x).toBeGreaterThanOrEqual(submit.bounds[0]);
    expect(at.x).toBeLessThan(submit.bounds[0] + submit.bounds[2]);
    expect(at.y).toBeGreaterThanOrEqual(submit.bounds[1]);
    expect(at.y).toBeLessThan(submit.bounds[1] + submit.bounds[3]);
    await find(title, (e) => e.role === 'label' && e.name === 'clicked Submit 1');
  });
});
