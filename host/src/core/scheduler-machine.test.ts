import { describe, expect, it } from 'vitest';
import { resolveConfig } from '@runboard/project/config';
import { defaultDisplays, effectiveCap, machinePolicy, type MachinePolicy } from './scheduler-machine.ts';
import { decide, type PolicyInput } from './scheduler-policy.ts';

const GiB = 1024 ** 3;

const machine = (over: Partial<MachinePolicy> = {}): MachinePolicy => ({
  displays: 2,
  displaysConfigured: true,
  memoryBytes: 8 * GiB,
  memorySaid: '8g',
  displayFlows: { desk: true },
  flowMemory: { big: 3 * GiB },
  ...over,
});
const base = (over: Partial<PolicyInput>): PolicyInput => ({
  queued: [],
  running: [],
  maxConcurrency: 8,
  flowCaps: { desk: 8, big: 8, shell: 8 },
  machine: machine(),
  now: 1_000_000,
  ...over,
});

describe('effectiveCap (the least of the caps, and which holds)', () => {
  it('is the least room over the caps given, and names the narrowest cap that has none', () => {
    expect(
      effectiveCap({
        flow: { name: 'f', used: 1, max: 4 },
        displays: { used: 1, max: 2, configured: true },
        slots: { used: 1, max: 8 },
      }),
    ).toEqual({ room: 1, holder: 'displays' });
    const held = effectiveCap({
      flow: { name: 'f', used: 2, max: 4 },
      displays: { used: 2, max: 2, configured: false },
      slots: { used: 4, max: 4 },
    });
    expect(held.room).toBe(0);
    expect(held.holder).toBe('displays'); // narrower than the run slots, which are full too
    expect(held.why).toMatch(/waiting for a private display: all 2 are in use \(limits.displays, by default/);
    expect(
      effectiveCap({ column: { name: 'needs-input', used: 4, max: 4 }, slots: { used: 0, max: 4 } }).why,
    ).toMatch(/column "needs-input" holds 4 \(limit 4\)/);
    expect(effectiveCap({ provider: { name: 'openai', used: 3, max: 3 } }).why).toMatch(
      /providers.openai.maxConcurrent/,
    );
    expect(effectiveCap({})).toEqual({ room: Number.POSITIVE_INFINITY, holder: null });
  });

  it('memory: the room is what is left over the run’s limit; a run larger than the budget starts alone', () => {
    const cap = (used: number) =>
      effectiveCap({ memory: { used, max: 8 * GiB, each: 3 * GiB, said: '8g' }, slots: { used: 0, max: 8 } });
    expect(cap(0)).toEqual({ room: 2, holder: 'memory' });
    expect(cap(3 * GiB).room).toBe(1);
    const held = cap(6 * GiB);
    expect(held.room).toBe(0);
    expect(held.why).toBe(
      'waiting for memory: runs going hold 6.0 GiB of 8.0 GiB (limits.memory 8g) and this run’s limit is 3.0 GiB (sandbox.memory)',
    );
    expect(effectiveCap({ memory: { used: 0, max: GiB, each: 2 * GiB } }).room).toBe(1);
    expect(effectiveCap({ memory: { used: 1, max: GiB, each: 2 * GiB } }).room).toBe(0);
  });
});

describe('the machine’s caps in the policy', () => {
  it('runs on private displays (attempts included) wait for a display; other flows go on', () => {
    const d = decide(
      base({
        queued: [
          { id: 'c1\u0000attempt-2', flow: 'desk' },
          { id: 'b', flow: 'desk' },
          { id: 's', flow: 'shell' },
        ],
        running: [
          { id: 'c1-r0', flow: 'desk' },
          { id: 'c1-r1', flow: 'desk' },
        ],
      }),
    );
    expect(d.start).toEqual(['s']);
    expect(d.waiting['c1\u0000attempt-2']).toMatch(/waiting for a private display: all 2 are in use/);
    expect(d.waiting.b).toMatch(/waiting for a private display/);
  });

  it('a judge’s run holds no display', () => {
    const d = decide(
      base({
        queued: [{ id: 'b', flow: 'desk' }],
        running: [
          { id: 'j', flow: 'desk', judge: true },
          { id: 'x', flow: 'desk' },
        ],
      }),
    );
    expect(d.start).toEqual(['b']);
  });

  it('counts the displays of the cards it starts in one decision', () => {
    const d = decide(
      base({
        queued: ['a', 'b', 'c'].map((id) => ({ id, flow: 'desk' })),
      }),
    );
    expect(d.start).toEqual(['a', 'b']);
    expect(d.waiting.c).toMatch(/private display/);
  });

  it('memory: flows that set sandbox.memory share limits.memory; the card says so', () => {
    const d = decide(base({ queued: ['a', 'b', 'c'].map((id) => ({ id, flow: 'big' })) }));
    expect(d.start).toEqual(['a', 'b']);
    expect(d.waiting.c).toMatch(/waiting for memory: runs going hold 6.0 GiB of 8.0 GiB/);
  });

  it('the run slots still hold when the machine has room, with their own words', () => {
    const d = decide(base({ maxConcurrency: 1, queued: [q('a'), q('b')] }));
    expect(d.start).toEqual(['a']);
    expect(d.waiting.b).toBe('all 1 run slots are busy');
  });
});

const q = (id: string) => ({ id, flow: 'shell' });

describe('machinePolicy (config limits:)', () => {
  const cfg = (yaml: string) => resolveConfig({ file: '/p/config.yaml', text: yaml }, null).config;
  const FLOWS = `flows:
  desk: { runner: computer-use, provider: openai, model: m, computerUse: { privateDisplay: true } }
  big: { runner: command, sandbox: { memory: 25% } }
  plain: { runner: command }
`;

  it('defaults: displays from the machine’s memory, memory the machine’s, only sandbox.memory counted', () => {
    const p = machinePolicy(cfg(`version: 2\n${FLOWS}`), 16 * GiB);
    expect(p).toMatchObject({
      displays: defaultDisplays(16 * GiB),
      displaysConfigured: false,
      memoryBytes: 16 * GiB,
      displayFlows: { desk: true },
      flowMemory: { big: 4 * GiB },
    });
    expect(p.flowMemory).not.toHaveProperty('plain');
    expect(defaultDisplays(16 * GiB)).toBe(32);
    expect(defaultDisplays(256 * 1024 ** 2)).toBe(1);
    expect(defaultDisplays(4096 * GiB)).toBe(900);
  });

  it('limits.displays and limits.memory from the config; a bad value says what to write', () => {
    const p = machinePolicy(cfg(`version: 2\nlimits: { displays: 3, memory: 50% }\n${FLOWS}`), 16 * GiB);
    expect(p).toMatchObject({
      displays: 3,
      displaysConfigured: true,
      memoryBytes: 8 * GiB,
      memorySaid: '50%',
    });
    expect(() => cfg(`version: 2\nlimits: { displays: 0 }\n${FLOWS}`)).toThrow(/limits\.displays/);
    expect(() => cfg(`version: 2\nlimits: { memory: lots }\n${FLOWS}`)).toThrow(
      /limits\.memory.*a size such as 12g, 512m or 80%/,
    );
    expect(() => cfg(`version: 2\nlimits: { workspaceCopy: 2 }\n${FLOWS}`)).toThrow(/limits\.workspaceCopy/);
  });
});
