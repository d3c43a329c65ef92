// The pure parts run.ts composes (issue 29's split): a command run's report, the vision step's decision,
// the worker's spec, an agent CLI's note, the asks at a run's end, the crash marker's lines.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FlowSpec } from '../protocol/index.ts';
import type { EndVerdict } from './classify-end.ts';
import { commandReport, commandShown, commandStartLine, directCommand } from './run-command.ts';
import { askAtEnd, mayAsk } from './run-asks.ts';
import { ActiveMarker, goneScratch } from './run-files.ts';
import { artifactsDirOf, outputFilesRefusal, visionPlan } from './run-prepare.ts';
import type { PreflightEnv } from './run-preflight.ts';
import { agentNote, workerSpec } from './worker-spec.ts';

const flow = (f: Partial<FlowSpec> = {}): FlowSpec => ({ name: 'f', runner: 'command', ...f });
const exit = (c: Partial<{ code: number | null; signal: number; execErrno: number; ms: number }>) => ({
  code: 0,
  signal: 0,
  execErrno: 0,
  ms: 5,
  ...c,
});

describe('a command run', () => {
  it('runs a string under /bin/sh -c and an argv as it is, under the jail init only for `command`', () => {
    expect(directCommand(flow(), 'echo hi', false)).toEqual(['/bin/sh', '-c', 'echo hi']);
    expect(directCommand(flow(), ['ls', '-l'], false)).toEqual(['ls', '-l']);
    expect(directCommand(flow(), 'echo hi', true)).toBeUndefined();
    expect(directCommand(flow({ runner: 'claude' }), 'echo hi', false)).toBeUndefined();
    expect(directCommand(flow(), undefined, false)).toBeUndefined();
  });

  it('shows the command as typed, cut at 200 characters', () => {
    expect(commandShown(['/bin/sh', '-c', 'echo hi'])).toBe('echo hi');
    expect(commandShown(['ls', '-l'])).toBe('ls -l');
    expect(commandStartLine(['/bin/sh', '-c', 'x'.repeat(300)])).toBe(`running ${'x'.repeat(200)}…`);
  });

  it.each<[string, ReturnType<typeof exit>, string[], boolean, string, string, number | null]>([
    ['exit 0', exit({}), ['true'], false, 'succeeded', 'command exited with code 0', 0],
    ['exit 3', exit({ code: 3 }), ['false'], false, 'failed', 'command exited with code 3', 3],
    [
      'not found',
      exit({ code: 127, execErrno: osConstants.errno.ENOENT }),
      ['nope'],
      false,
      'failed',
      'command not found: nope',
      127,
    ],
    [
      'not executable',
      exit({ code: 126, execErrno: osConstants.errno.EACCES }),
      ['./x'],
      false,
      'failed',
      'permission denied running ./x',
      127,
    ],
    [
      'killed, cancelled',
      exit({ code: null, signal: 15 }),
      ['/bin/sh', '-c', 'sleep 9'],
      true,
      'failed',
      'command killed by SIGTERM (cancelled)',
      null,
    ],
  ])('reports %s', (_, c, argv, cancelled, status, summary, exitCode) => {
    const r = commandReport(c, argv, cancelled);
    expect(r).toMatchObject({ status, summary, exitCode, metrics: { commandMs: 5 } });
  });
});

describe('the vision step', () => {
  const vision = { profile: 'see', provider: 'openai', model: 'gpt-v' };
  const env = (e: Partial<PreflightEnv> = {}): PreflightEnv => ({
    landlockAbi: 7,
    landlockReason: '',
    useNamespaces: true,
    knowsProvider: (p) => p === 'openai',
    hasKey: () => true,
    ...e,
  });

  it('grants a route for a vision profile, none without one, documents off, or no proxy', () => {
    expect(visionPlan(flow({ vision }), env())).toEqual({ kind: 'grant', vision });
    expect(visionPlan(flow(), env()).kind).toBe('none');
    expect(visionPlan(flow({ vision, documents: false }), env()).kind).toBe('none');
    expect(visionPlan(flow({ vision }), undefined).kind).toBe('none');
  });

  it('says before the run starts that a known provider has no key, with what to do', () => {
    const plan = visionPlan(
      flow({ vision }),
      env({ hasKey: () => false, missingKeyGuidance: () => 'add one' }),
    );
    expect(plan).toEqual({
      kind: 'no-key',
      provider: 'openai',
      message:
        'no vision route for this run (vision profile "see"): add one; analyze_media says so when it is used',
    });
  });
});

describe('the other prepare steps', () => {
  it('puts artifacts under the log dir for the runners that make them', () => {
    expect(artifactsDirOf(flow({ runner: 'replay' }), '/l')).toBe('/l/artifacts');
    expect(artifactsDirOf(flow(), '/l')).toBeUndefined();
  });

  it('says a full disk is full, with what to do', () => {
    const full = Object.assign(new Error('x'), { code: 'ENOSPC' });
    expect(outputFilesRefusal(full, '/l')).toBe(
      "could not create the run's output files in /l: ENOSPC (the disk holding the run logs is full; free space and run again)",
    );
    expect(outputFilesRefusal(Object.assign(new Error('x'), { code: 'EACCES' }), '/l')).toMatch(/: EACCES$/);
  });
});

describe("the worker's spec and notes", () => {
  const base = {
    runId: 'r1',
    flow: flow({ runner: 'claude', model: 'm1' }),
    card: { path: '/p/cards/a.md' },
    workspace: '/w',
    command: undefined,
    heartbeatIntervalMs: 1000,
    artifactsDir: undefined,
    resume: undefined,
    secrets: undefined,
    model: undefined,
    vision: undefined,
  };

  it('holds only what the run was given', () => {
    const s = workerSpec(base);
    expect(s).not.toHaveProperty('model');
    expect(s).not.toHaveProperty('vision');
    expect(s).not.toHaveProperty('resume');
    expect(s.runner).toBe('claude');
  });

  it('gives the model route and vision without their ports or run ids', () => {
    const s = workerSpec({
      ...base,
      model: { runId: 'r1', provider: 'anthropic', token: 't', port: 9, baseUrl: 'http://127.0.0.1:9' },
      vision: { provider: 'openai', model: 'v', token: 'u', port: 9, baseUrl: 'http://127.0.0.1:9/v' },
      resume: { session: 's', note: 'n' },
    });
    expect(s.model).toEqual({
      provider: 'anthropic',
      baseUrl: 'http://127.0.0.1:9',
      token: 't',
      model: 'm1',
    });
    expect(s.vision).toEqual({ provider: 'openai', model: 'v', baseUrl: 'http://127.0.0.1:9/v', token: 'u' });
    expect(s.resume).toEqual({ session: 's', note: 'n' });
  });

  it("reads an agent CLI's session id and refusals, and nothing from a malformed id", () => {
    const id = '0b2f1c9e-8a6d-4c5b-9e7f-1a2b3c4d5e6f';
    expect(agentNote({ agent: { kind: 'session', id } })).toEqual({ session: id });
    expect(agentNote({ agent: { kind: 'session', id: '../../etc' } })).toEqual({});
    expect(agentNote({ agent: { kind: 'permission-denied', tool: 'Write', detail: '/x' } })).toEqual({
      refused: 'Write: /x',
    });
    expect(agentNote(undefined)).toEqual({});
  });
});

describe('asks at the end', () => {
  const failed: EndVerdict = { status: 'failed', reason: 'sandbox-denial', detail: 'd' };

  it('looks at denials only for a denied or needs-input end', () => {
    expect(mayAsk(failed)).toBe(true);
    expect(mayAsk({ status: 'needs-input', reason: 'finished', detail: '' })).toBe(true);
    expect(mayAsk({ status: 'failed', reason: 'crashed', detail: '' })).toBe(false);
  });

  it('leaves the end as it was with no denials, without building the context', () => {
    const result = {} as Parameters<typeof askAtEnd>[2];
    const out = askAtEnd(
      failed,
      [],
      result,
      'f',
      () => undefined,
      () => {
        throw new Error('not needed');
      },
    );
    expect(out).toBe(failed);
    expect(result.asks).toBeUndefined();
  });
});

describe("a run's files", () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes marker versions as lines, in order, and removes it after the last', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rb-marker-'));
    const errors: Error[] = [];
    const m = new ActiveMarker(path.join(dir, 'r1'), (e) => errors.push(e));
    void m.write({ jailPid: 0 });
    await m.write({ jailPid: 42 });
    expect(readFileSync(m.file, 'utf8')).toBe('{"jailPid":0}\n{"jailPid":42}\n');
    void m.write({ jailPid: 43 });
    await m.remove();
    expect(() => readFileSync(m.file)).toThrow(/ENOENT/);
    expect(errors).toEqual([]);
  });

  it('moves a scratch dir out of its name, or leaves a missing one where it is', () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rb-scratch-'));
    const s = path.join(dir, 'run1');
    expect(goneScratch(s)).toBe(s); // not there
    rmSync(s, { force: true });
    const made = mkdtempSync(path.join(dir, 'run-'));
    expect(goneScratch(made)).toBe(path.join(dir, `.gone-${path.basename(made)}`));
  });
});
