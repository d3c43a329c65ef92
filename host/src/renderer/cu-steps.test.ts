import { describe, expect, it } from 'vitest';
import type { RunEvent } from '@runboard/supervisor/protocol/data';
import { filmstripOf, isFilmEvent, shortArgs } from './cu-steps.ts';

let seq = 0;
const log = (data: Record<string, unknown>): RunEvent => ({
  seq: seq++,
  ts: new Date().toISOString(),
  type: 'log',
  message: '',
  data,
});

describe('the computer-use filmstrip', () => {
  it('folds the step events of a run into its steps, in order', () => {
    const events = [
      log({ kind: 'cu-live', file: 'artifacts/live.jpg', intervalMs: 1000 }),
      log({ kind: 'cu-screenshot', step: 0, file: 'step-000.jpg', width: 640, height: 400, captureMs: 12.3 }),
      // two calls of one model turn: one step, one screenshot
      log({
        kind: 'cu-step',
        step: 1,
        tool: 'desktop_action',
        action: 'left_click',
        args: { action: 'left_click', x: 10, y: 20 },
        screenshot: 'step-001.jpg',
        timings: { modelMs: 800, toolMs: 5, actMs: 9, captureMs: 11, image: [640, 400] },
        tokens: { input: 1200, output: 30 },
      }),
      log({
        kind: 'cu-step',
        step: 1,
        tool: 'desktop_action',
        action: 'type',
        args: { action: 'type', text: 'Ada' },
        screenshot: 'step-001.jpg',
        timings: { modelMs: 800, toolMs: 4, actMs: 9, captureMs: 11, image: [640, 400] },
        tokens: { input: 1200, output: 30 },
      }),
      log({
        kind: 'cu-step',
        step: 2,
        tool: 'terminal_exec',
        action: 'terminal_exec',
        args: { argv: ['x'] },
        error: 'bad',
      }),
      log({
        kind: 'cu-final',
        step: 3,
        text: '{"status":"SUCCESS","summary":"filled","error":"","questions":[]}',
        valid: true,
        timings: { modelMs: 400 },
      }),
      { seq: seq++, ts: '', type: 'progress', message: 'step 2' } as RunEvent,
    ];
    const steps = filmstripOf([...events].reverse());
    expect(steps.map((s) => s.step)).toEqual([0, 1, 2, 3]);
    expect(steps[0]).toMatchObject({ screenshot: 'artifacts/step-000.jpg', image: [640, 400], calls: [] });
    expect(steps[1]!.screenshot).toBe('artifacts/step-001.jpg');
    expect(steps[1]!.calls.map((c) => c.action).sort()).toEqual(['left_click', 'type']);
    expect(steps[1]!.calls.find((c) => c.action === 'type')!.args).toBe('text="Ada"');
    expect(steps[1]!.timings).toMatchObject({ modelMs: 800, actMs: 9, captureMs: 11 });
    expect(steps[1]!.tokens).toEqual({ input: 1200, output: 30 });
    expect(steps[2]!.calls[0]).toMatchObject({ tool: 'terminal_exec', error: 'bad' });
    expect(steps[2]!.screenshot).toBeUndefined();
    expect(steps[3]!.final).toMatchObject({ valid: true, status: 'SUCCESS', summary: 'filled' });
    // the same events twice (a re-attached stream) change nothing
    expect(filmstripOf([...events, ...events])).toEqual(filmstripOf(events));
    expect(events.filter(isFilmEvent)).toHaveLength(6);
  });

  it('shortens long arguments', () => {
    expect(shortArgs({ action: 'left_click', x: 1, y: 2 })).toBe('x=1 y=2');
    expect(shortArgs({ text: 'a'.repeat(200) })).toHaveLength(80);
    expect(shortArgs(null)).toBe('');
  });
});
