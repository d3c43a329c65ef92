/**
 * The completion contract and the loop's failure paths: SUCCESS / NEEDS_CLARIFICATION / FAILED, an
 * invalid final answer, malformed and off-screen tool calls (the run stops and asks instead of
 * guessing), terminal_exec and its UI-automation guard, 429 then success, a rate limit beyond the
 * retry budget, cancel mid-run, and a missing key.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desktop } from '../../native/src/index.ts';
import { act, artifact, CuHarness, cuEvents, final, personPressesEscape } from './cu-harness.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start();
});
afterAll(async () => {
  await t?.stop();
});

const card = (marker: string): string => t.card(marker, `${marker} Do the thing on screen.`);

describe('completion contract', () => {
  it('NEEDS_CLARIFICATION: needs-input with the questions in result.json and the report', async () => {
    t.episodes([
      {
        name: 'clarify',
        match: 'CU-CLARIFY',
        turns: [
          act({ action: 'screenshot' }),
          final({
            status: 'NEEDS_CLARIFICATION',
            summary: 'two accounts match',
            error: '',
            questions: ['Which account: work or personal?', 'Should the old draft be deleted?'],
          }),
        ],
      },
    ]);
    const rec = await t.run(card('CU-CLARIFY'), t.flow());
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.questions).toEqual([
      'Which account: work or personal?',
      'Should the old draft be deleted?',
    ]);
    expect(rec.result.summary).toBe('two accounts match');
    expect(artifact(rec, 'report.md')).toContain('- Which account: work or personal?');
  });

  it('FAILED: failed with summary and error', async () => {
    t.episodes([
      {
        name: 'failed',
        match: 'CU-FAILED',
        turns: [
          final({
            status: 'FAILED',
            summary: 'the app is not installed',
            error: 'no such app',
            questions: [],
          }),
        ],
      },
    ]);
    const rec = await t.run(card('CU-FAILED'), t.flow());
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('finished');
    expect(rec.result.summary).toBe('the app is not installed: no such app');
    expect(rec.result.questions).toBeUndefined();
  });

  it('a final answer that is not the completion JSON stops with a question', async () => {
    t.episodes([{ name: 'prose', match: 'CU-PROSE', turns: [{ text: 'I think it is done, probably.' }] }]);
    const rec = await t.run(card('CU-PROSE'), t.flow());
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.questions?.[0]).toMatch(/without a valid result.*I think it is done/);
  });

  it('a malformed tool call (arguments not JSON) stops the run with a clarification question', async () => {
    t.episodes([
      {
        name: 'malformed',
        match: 'CU-MALFORMED',
        turns: [{ toolCalls: [{ name: 'desktop_action', arguments: '{"action": "left_click", "x": 10' }] }],
      },
    ]);
    const rec = await t.run(card('CU-MALFORMED'), t.flow());
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.questions?.[0]).toMatch(/instead of guessing.*not valid JSON/);
    const steps = cuEvents(rec, 'cu-step');
    expect(steps).toHaveLength(1);
    expect(steps[0]!.error).toMatch(/not valid JSON/);
    // Nothing was sent after it.
    expect(t.model.requests.filter((r) => r.episode === 'malformed')).toHaveLength(1);
  });

  it('a click off the screenshot and an unknown tool are invalid, not guessed', async () => {
    t.episodes([
      { name: 'offscreen', match: 'CU-OFFSCREEN', turns: [act({ action: 'left_click', x: 5000, y: 10 })] },
      {
        name: 'unknown',
        match: 'CU-UNKNOWN-TOOL',
        turns: [{ toolCalls: [{ name: 'rm_rf', arguments: {} }] }],
      },
    ]);
    const off = await t.run(card('CU-OFFSCREEN'), t.flow());
    expect(off.result.status).toBe('needs-input');
    expect(off.result.questions?.[0]).toMatch(/outside the 640x400 screenshot/);
    const unk = await t.run(card('CU-UNKNOWN-TOOL'), t.flow());
    expect(unk.result.status).toBe('needs-input');
    expect(unk.result.questions?.[0]).toMatch(/unknown tool "rm_rf"/);
  });
});

describe('budgets', () => {
  it('the step budget stops a run that goes on and on; the image budget is kept by re-encoding', async () => {
    t.episodes([
      {
        name: 'endless',
        match: 'CU-ENDLESS',
        turns: Array.from({ length: 10 }, () => act({ action: 'mouse_move', x: 10, y: 10 })),
      },
    ]);
    const rec = await t.run(card('CU-ENDLESS'), t.flow({}, { maxSteps: 3, imageMaxBytes: 2000 }));
    expect(rec.result.status).toBe('failed');
    expect(rec.result.summary).toMatch(/step budget \(3 model turns\) ran out/);
    expect(rec.result.metrics).toMatchObject({ steps: 3, stepBudget: 3 });
    const shots = [cuEvents(rec, 'cu-screenshot')[0]!, ...cuEvents(rec, 'cu-step')];
    for (const s of cuEvents(rec, 'cu-step'))
      expect((s.timings as { imageBytes: number }).imageBytes).toBeLessThanOrEqual(2000);
    expect(shots[0]!.bytes as number).toBeLessThanOrEqual(2000);
    // Re-encoded at a lower quality, or smaller, to fit.
    expect((shots[0]!.quality as number) < 80 || (shots[0]!.width as number) < 640).toBe(true);
    expect(rec.result.metrics.imageBytesMax as number).toBeLessThanOrEqual(2000);
  });
});

describe('terminal_exec', () => {
  it('runs a program without a shell, with a shell when asked, and refuses UI automation', async () => {
    t.episodes([
      {
        name: 'term',
        match: 'CU-TERM',
        turns: [
          { toolCalls: [{ name: 'terminal_exec', arguments: { command: 'echo', args: ['a;b', '$HOME'] } }] },
          {
            toolCalls: [
              { name: 'terminal_exec', arguments: { command: 'echo $((40+2)); exit 3', shell: true } },
            ],
          },
          { toolCalls: [{ name: 'terminal_exec', arguments: { command: 'xdotool', args: ['click', '1'] } }] },
          {
            toolCalls: [
              { name: 'terminal_exec', arguments: { command: 'sleep', args: ['5'], timeout_seconds: 0.2 } },
            ],
          },
          { toolCalls: [{ name: 'terminal_exec', arguments: { command: 'no-such-program-xyz' } }] },
          final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(card('CU-TERM'), t.flow());
    expect(rec.result.status).toBe('succeeded');
    const r = cuEvents(rec, 'cu-step').map((s) => s.result as Record<string, unknown>);
    expect(r[0]).toMatchObject({ ok: true, exit_code: 0, stdout: 'a;b $HOME\n' });
    expect(r[1]).toMatchObject({ ok: false, exit_code: 3, stdout: '42\n' });
    expect(r[2]).toMatchObject({ ok: false, refused: true });
    expect(r[2]!.error).toMatch(/use desktop_action/);
    expect(r[3]).toMatchObject({ ok: false, timed_out: true });
    expect(r[4]).toMatchObject({ ok: false });
    expect(r[4]!.error).toMatch(/not found/);
  });
});

describe('transport', () => {
  it('429 then success: retried with backoff, one retry in the metrics', async () => {
    t.episodes([
      {
        name: 'ratelimit',
        match: 'CU-429',
        indexBy: 'requests',
        turns: [
          { status: 429, headers: { 'retry-after-ms': '150' }, errorMessage: 'slow down' },
          { status: 503 },
          final({ status: 'SUCCESS', summary: 'done after retries', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(card('CU-429'), t.flow());
    expect(rec.result.status).toBe('succeeded');
    expect(rec.result.metrics.modelRetries).toBe(2);
    const retries = cuEvents(rec, 'cu-retry');
    expect(retries.map((r) => r.status)).toEqual([429, 503]);
    expect(retries[0]!.waitMs).toBe(150);
  });

  it('a rate limit whose reset lies beyond the retry budget fails at once and says until when', async () => {
    t.episodes([
      {
        name: 'ratelimit-long',
        match: 'CU-429-LONG',
        indexBy: 'requests',
        turns: [{ status: 429, headers: { 'retry-after': '3600' } }],
      },
    ]);
    const rec = await t.run(card('CU-429-LONG'), t.flow());
    expect(rec.result.status).toBe('failed');
    expect(rec.result.summary).toMatch(/rate limited by the model provider until/);
    expect(Date.parse(rec.result.metrics.rateLimitedUntil as string)).toBeGreaterThan(Date.now() + 3000_000);
    expect(t.model.requests.filter((r) => r.episode === 'ratelimit-long')).toHaveLength(1);
  });

  it('cancel mid-run: the hanging model request is abandoned and the run ends cancelled', async () => {
    t.episodes([
      { name: 'hang', match: 'CU-HANG', turns: [act({ action: 'wait', seconds: 0.1 }), { hang: true }] },
    ]);
    const next = t.model.nextRequest('hang');
    const { runId } = await t.launch(card('CU-HANG'), t.flow());
    const collected = t.h.collect(runId);
    await next; // turn 0
    await new Promise<void>((res) => {
      const wait = (): void =>
        void (t.model.requests.some((r) => r.episode === 'hang' && r.turn === 1)
          ? res()
          : setTimeout(wait, 20));
      wait();
    });
    const t0 = Date.now();
    await t.h.client.cancel(runId);
    const rec = await collected;
    expect(rec.result.status).toBe('cancelled');
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(cuEvents(rec, 'cu-step')).toHaveLength(1);
  });
});

describe('the real display', () => {
  it('takes one computer-use run at a time; a second launch is refused while it runs', async () => {
    t.episodes([{ name: 'busy', match: 'CU-BUSY', turns: [{ hang: true }] }]);
    const next = t.model.nextRequest('busy');
    const { runId } = await t.launch(card('CU-BUSY'), t.flow());
    const collected = t.h.collect(runId);
    await next;
    await expect(t.launch(card('CU-BUSY-2'), t.flow())).rejects.toThrow(/driving the display/);
    await t.h.client.cancel(runId);
    expect((await collected).result.status).toBe('cancelled');
  });
});

describe('takeover', () => {
  it("the agent's own Escape does not cancel the run; the person's Escape does", async () => {
    t.episodes([
      {
        name: 'takeover',
        match: 'CU-TAKEOVER',
        turns: [
          act({ action: 'key', keys: 'escape' }),
          act({ action: 'wait', seconds: 0.3 }),
          { hang: true },
        ],
      },
    ]);
    const { runId } = await t.launch(card('CU-TAKEOVER'), t.flow());
    const collected = t.h.collect(runId);
    await new Promise<void>((res) => {
      const wait = (): void =>
        void (t.model.requests.some((r) => r.episode === 'takeover' && r.turn === 2)
          ? res()
          : setTimeout(wait, 20));
      wait();
    });
    // Two steps done, one of them the agent's own Escape: the run is still going.
    // The HUD is on screen (top centre) …
    const screen = await desktop.capture({ format: 'raw', cursor: false });
    const hudPixels = (rgba: Buffer, width: number, y: number): number => {
      let n = 0;
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 4;
        if (
          Math.abs(rgba[i]! - 0xb0) < 40 &&
          Math.abs(rgba[i + 1]! - 0x20) < 40 &&
          Math.abs(rgba[i + 2]! - 0x6a) < 40
        )
          n++;
      }
      return n;
    };
    expect(hudPixels(screen.data, screen.width, 3)).toBeGreaterThan(100);
    // … but not in the screenshots sent to the model (decoded with GdkPixbuf).
    const logDir = (await t.h.client.list({ activeOnly: true })).runs.find((r) => r.runId === runId)!.logDir;
    const decoded = execFileSync(
      '/usr/bin/python3',
      [
        '-c',
        "import sys, gi; gi.require_version('GdkPixbuf', '2.0'); from gi.repository import GdkPixbuf; p = GdkPixbuf.Pixbuf.new_from_file(sys.argv[1]).add_alpha(False, 0, 0, 0); sys.stdout.buffer.write(p.get_width().to_bytes(4, 'little') + p.get_pixels())",
        path.join(logDir, 'artifacts', 'step-002.jpg'),
      ],
      { maxBuffer: 64 << 20 },
    );
    const w = decoded.readUInt32LE(0);
    for (const y of [1, 3, 6]) expect(hudPixels(decoded.subarray(4), w, y)).toBe(0);
    personPressesEscape(t.session!.env);
    const rec = await collected;
    expect(rec.result.status).toBe('cancelled');
    expect(rec.result.termination).toEqual({
      reason: 'cancelled',
      detail: 'cancelled: the person pressed Escape and took over the desktop',
    });
    expect(cuEvents(rec, 'cu-step').map((s) => s.action)).toEqual(['key', 'wait']);
    const escapes = cuEvents(rec, 'cu-escape');
    expect(escapes.map((e) => e.by)).toEqual(['agent', 'person']);
    expect(escapes[0]!.device).toMatch(/XTEST/);
    expect(escapes[1]!.device).toBe('Xvfb keyboard');
  });

  it('takeover: false runs without the watcher', async () => {
    t.episodes([
      {
        name: 'notakeover',
        match: 'CU-NO-TAKEOVER',
        turns: [final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] })],
      },
    ]);
    const rec = await t.run(card('CU-NO-TAKEOVER'), t.flow({}, { takeover: false }));
    expect(rec.result.status).toBe('succeeded');
  });
});

describe('keys', () => {
  it('a missing key fails the run at once, with guidance on where to store it', async () => {
    const bare = await CuHarness.start({ keys: false, desktop: false });
    try {
      const rec = await bare.run(bare.card('no key', 'CU-NOKEY'), bare.flow({ provider: 'anthropic' }));
      expect(rec.result.status).toBe('failed');
      expect(rec.result.termination?.reason).toBe('missing-key');
      expect(rec.result.termination?.detail).toMatch(/no API key for provider "anthropic".*0600/);
      expect(bare.model.requests).toHaveLength(0);
    } finally {
      await bare.stop();
    }
  });
});
