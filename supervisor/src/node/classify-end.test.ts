import { describe, expect, it } from 'vitest';
import {
  classifyEnd,
  type EndEvidence,
  type EndVerdict,
  type FinishedReport,
  type JailExit,
} from './classify-end.ts';

const exit = (code: number | null, signal = 0): JailExit => ({
  code,
  signal,
  rchar: 0,
  wchar: 0,
  readBytes: 0,
  writeBytes: 0,
  utimeMs: 0,
  stimeMs: 0,
  maxRssKb: 0,
});
const report = (status: FinishedReport['status'], extra: Partial<FinishedReport> = {}): FinishedReport => ({
  status,
  exitCode: 0,
  summary: 'done',
  metrics: {},
  ...extra,
});
const evidence = (e: Partial<EndEvidence>): EndEvidence => ({
  endCause: null,
  jailExit: null,
  jailError: '',
  jailProcess: { code: 0, signal: null },
  report: null,
  denials: [],
  ...e,
});

const table: [string, Partial<EndEvidence>, Partial<EndVerdict>][] = [
  [
    'a plain command killed by SIGKILL from outside (the soak, c0411)',
    {
      jailExit: { ...exit(0), command: { code: null, signal: 9, execErrno: 0, ms: 5 } },
      report: report('failed', { summary: 'command killed by SIGKILL' }),
    },
    { status: 'failed', reason: 'killed', detail: expect.stringMatching(/SIGKILL from outside Runboard/) },
  ],
  [
    'a plain command that failed by itself',
    {
      jailExit: { ...exit(0), command: { code: 3, signal: 0, execErrno: 0, ms: 5 } },
      report: report('failed', { summary: 'command exited with code 3' }),
    },
    { status: 'failed', reason: 'finished' },
  ],
  [
    'cancelled by the user',
    { endCause: { reason: 'cancelled', detail: 'c' }, jailExit: exit(null, 15) },
    { status: 'cancelled', reason: 'cancelled', detail: 'c' },
  ],
  [
    'time limit',
    { endCause: { reason: 'timeout', detail: 't' } },
    { status: 'timed-out', reason: 'timeout' },
  ],
  [
    'hung worker',
    { endCause: { reason: 'heartbeat-timeout', detail: 'h' } },
    { status: 'failed', reason: 'heartbeat-timeout' },
  ],
  [
    'stalled',
    { endCause: { reason: 'stalled', detail: 's' }, report: report('succeeded') },
    { status: 'failed', reason: 'stalled' },
  ],
  [
    'jail could not sandbox (126)',
    { jailExit: exit(126), jailError: 'landlock failed' },
    { status: 'failed', reason: 'sandbox-failed', detail: 'landlock failed' },
  ],
  [
    'jail error naming the sandbox',
    { jailError: 'sandbox setup failed: x', jailProcess: { code: 126, signal: null } },
    { status: 'failed', reason: 'sandbox-failed' },
  ],
  [
    'jail never reported an exit',
    { jailProcess: { code: 127, signal: null } },
    { status: 'failed', reason: 'spawn-failed', detail: 'the run jail exited with 127' },
  ],
  [
    'worker crashed before reporting',
    { jailExit: exit(1) },
    { status: 'failed', reason: 'crashed', detail: 'the worker exited with code 1 before it reported' },
  ],
  [
    'worker crashed by a fault before reporting',
    { jailExit: exit(null, 11) },
    { status: 'failed', reason: 'crashed', detail: 'the worker was killed by SIGSEGV before it reported' },
  ],
  [
    'worker killed from outside before reporting',
    { jailExit: exit(null, 9) },
    {
      status: 'failed',
      reason: 'killed',
      detail:
        'the worker was killed by SIGKILL from outside Runboard (no cancel, no limit) before it reported',
    },
  ],
  [
    'the run met its memory limit (the kernel killed a process, the whole run ended)',
    { jailExit: { ...exit(null, 9), memoryMax: 256 << 20, memoryKills: 1, memoryPeak: 256 << 20 } },
    {
      status: 'failed',
      reason: 'memory-limit',
      detail: 'killed: memory limit (256 MiB), raise sandbox.memory in the flow if the run needs more',
    },
  ],
  [
    'worker reported then was killed',
    { jailExit: exit(null, 9), report: report('succeeded') },
    {
      status: 'failed',
      reason: 'killed',
      detail: 'the worker reported "succeeded" but then was killed by SIGKILL from outside Runboard',
    },
  ],
  [
    'worker reported then faulted',
    { jailExit: exit(null, 6), report: report('succeeded') },
    {
      status: 'failed',
      reason: 'crashed',
      detail: 'the worker reported "succeeded" but then was killed by SIGABRT',
    },
  ],
  [
    'jail killed from outside (no exit line)',
    { jailProcess: { code: null, signal: 'SIGKILL' }, report: report('succeeded') },
    {
      status: 'failed',
      reason: 'killed',
      detail: expect.stringContaining('jail was killed by SIGKILL from outside'),
    },
  ],
  [
    'jail died of a fault without an exit line',
    { jailProcess: { code: null, signal: 'SIGSEGV' } },
    { status: 'failed', reason: 'spawn-failed', detail: 'the run jail exited with SIGSEGV' },
  ],
  [
    'worker reported then exited non-zero',
    { jailExit: exit(3), report: report('succeeded') },
    { status: 'failed', reason: 'crashed' },
  ],
  [
    'person took over',
    { jailExit: exit(0), report: report('failed', { cancelledBy: 'person', summary: 'Escape' }) },
    { status: 'cancelled', reason: 'cancelled', detail: 'Escape' },
  ],
  [
    'succeeded',
    { jailExit: exit(0), report: report('succeeded') },
    { status: 'succeeded', reason: 'finished', detail: 'done' },
  ],
  [
    'needs input',
    { jailExit: exit(0), report: report('needs-input') },
    { status: 'needs-input', reason: 'finished' },
  ],
  [
    'failed with denials',
    { jailExit: exit(0), report: report('failed'), denials: ['/etc/x'] },
    { status: 'failed', reason: 'sandbox-denial', detail: 'done; the sandbox denied: /etc/x' },
  ],
  [
    'succeeded despite denials',
    { jailExit: exit(0), report: report('succeeded'), denials: ['/etc/x'] },
    { status: 'succeeded', reason: 'finished' },
  ],
];

describe('classifyEnd', () => {
  it.each(table)('%s', (_name, e, want) => {
    expect(classifyEnd(evidence(e))).toMatchObject(want);
  });
});
