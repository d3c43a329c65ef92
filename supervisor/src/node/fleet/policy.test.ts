import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { FlowSpec } from '../../protocol/index.ts';
import { DEFAULT_TMP_SIZE } from '../jail-args.ts';
import { holdToPolicy, jobRunId, tmpBytes } from './policy.ts';

const GB = 1024 ** 3;
const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-policy-'));
mkdirSync(path.join(dir, 'cache', 'npm'), { recursive: true });
mkdirSync(path.join(dir, 'other'));
symlinkSync(path.join(dir, 'other'), path.join(dir, 'cache', 'escape'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const flow = (sandbox: FlowSpec['sandbox']): FlowSpec => ({ name: 'f', runner: 'command', sandbox });
const held = (sandbox: FlowSpec['sandbox'], policy = {}) =>
  holdToPolicy(flow(sandbox), policy, 'h1', 16 * GB);

describe('a fleet job held to its host’s sandbox policy', () => {
  it('refuses what the host does not allow, naming the fleet join option', () => {
    expect(held({ tcpPorts: [22] })).toEqual({
      refused: expect.stringMatching(/TCP port 22.*--tcp-port 22/),
    });
    expect(held({ tcpPorts: [5432, 22] }, { tcpPorts: [5432] })).toEqual({
      refused: expect.stringMatching(/TCP port 22/),
    });
    expect(held({ udp: true })).toEqual({ refused: expect.stringMatching(/UDP.*--udp/) });
    expect(held({ allowAbstractUnix: true })).toEqual({ refused: expect.stringMatching(/--abstract-unix/) });
    expect(held({ allowUnsandboxed: true })).toEqual({
      refused: expect.stringMatching(/--allow-unsandboxed/),
    });
    // a local run's default (DEFAULT_TMP_SIZE, 1g) is the most without --tmp-size
    expect(held({ tmpSize: '26%' })).toEqual({
      refused: expect.stringMatching(new RegExp(`26%.*at most ${DEFAULT_TMP_SIZE}`)),
    });
    expect(held({ tmpSize: '5g' })).toEqual({ refused: expect.stringMatching(/--tmp-size 5g/) });
    expect(held({ tmpSize: '600m' }, { tmpSize: '512m' })).toEqual({ refused: expect.anything() });
    expect(held({ maxProcesses: 4096 })).toEqual({ refused: expect.stringMatching(/--max-processes 4096/) });
    // memory: a local run's default (DEFAULT_MEMORY, 50%) is the most without --memory
    expect(held({ memory: '100%' })).toEqual({
      refused: expect.stringMatching(/a memory limit of 100% \(at most 50% here\).*--memory 100%/),
    });
    expect(held({ memory: '3g' }, { memory: '2g' })).toEqual({ refused: expect.anything() });
    expect(held({ memory: '1g' }, { memory: '2g' })).toEqual({ flow: flow({ memory: '1g' }) });
    expect(held(undefined, { memory: '2g' })).toEqual({ flow: flow({ memory: '2g' }) });
    expect(held({ writable: ['/home'] })).toEqual({ refused: expect.stringMatching(/write \/home/) });
    const w = { writable: [path.join(dir, 'cache')] };
    expect(held({ writable: [path.join(dir, 'other')] }, w)).toEqual({ refused: expect.anything() });
    // a link inside the allowed folder that leads out of it
    expect(held({ writable: [path.join(dir, 'cache', 'escape')] }, w)).toEqual({
      refused: expect.stringMatching(/other/),
    });
    expect(held({ writable: [`${path.join(dir, 'cache')}/../other`] }, w)).toEqual({
      refused: expect.stringMatching(/not a plain absolute path/),
    });
    expect(holdToPolicy({ name: 'f', runner: 'command', prompt: '/srv/../etc' }, {}, 'h1')).toEqual({
      refused: expect.stringMatching(/prompt folder/),
    });
  });

  it('takes what narrows it, and gives what the job leaves unset the host’s bound', () => {
    const policy = {
      tcpPorts: [5432, 6379],
      tmpSize: '512m',
      maxProcesses: 256,
      writable: [path.join(dir, 'cache')],
    };
    const r = held(
      { tcpPorts: [5432], tmpSize: '64m', maxProcesses: 64, writable: [path.join(dir, 'cache', 'npm')] },
      policy,
    );
    expect(r).toEqual({
      flow: flow({
        tcpPorts: [5432],
        tmpSize: '64m',
        maxProcesses: 64,
        writable: [path.join(dir, 'cache', 'npm')],
      }),
    });
    expect(held(undefined, policy)).toEqual({ flow: flow({ tmpSize: '512m', maxProcesses: 256 }) });
    // no policy: a local run's defaults, which a job without sandbox settings keeps as they are
    expect(held(undefined)).toEqual({ flow: flow({}) });
    expect(held({ tmpSize: DEFAULT_TMP_SIZE, maxProcesses: 1024 })).toEqual({
      flow: flow({ tmpSize: DEFAULT_TMP_SIZE, maxProcesses: 1024 }),
    });
  });

  it('sizes tmpfs values as tmpfs does', () => {
    expect(tmpBytes('512m', 16 * GB)).toBe(512 * 1024 ** 2);
    expect(tmpBytes('2g', 16 * GB)).toBe(2 * GB);
    expect(tmpBytes('25%', 16 * GB)).toBe(4 * GB);
    expect(tmpBytes('4096', 16 * GB)).toBe(4096);
  });

  it('takes a job id only when it is the run id the job carries', () => {
    expect(jobRunId('20260101-120000-abc123', '20260101-120000-abc123')).toBe('20260101-120000-abc123');
    expect(jobRunId('../../x', '../../x')).toBeNull();
    expect(jobRunId('20260101-120000-abc123', '20260101-120000-abc124')).toBeNull();
    expect(jobRunId('20260101-120000-abc123/../../x', '20260101-120000-abc123/../../x')).toBeNull();
    expect(jobRunId(undefined, undefined)).toBeNull();
  });
});
