import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Run } from './run.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function refusedRun(): { run: Run; logDir: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'runboard-run-'));
  dirs.push(dir);
  const logDir = path.join(dir, 'logs', 'r1');
  const run = new Run(
    {
      log: pino({ level: 'silent' }),
      jailPath: '/nonexistent/runboard-jail',
      workerArgv: ['node'],
      hiddenPaths: [],
      landlockAbi: 0, // no sandbox, and the flow does not allow running without: refused before any spawn
      landlockReason: 'no Landlock in this test',
      useNamespaces: false,
      supervisorDir: dir,
      baseEnv: {},
    },
    {
      runId: '20260101-000000-000abc',
      logDir,
      scratchDir: path.join(dir, 'scratch'),
      card: { path: path.join(dir, 'card.md') },
      flow: { name: 'f', runner: 'command' },
      workspace: dir,
      command: 'true',
    },
  );
  return { run, logDir };
}

describe('Run ending', () => {
  it('a failing step of the final record does not leave a run that never ends', async () => {
    const { run, logDir } = refusedRun();
    run.signals.on('final', () => {
      throw new Error('an attached client broke');
    });
    run.start();
    const result = await run.whenEnded();
    expect(result.termination?.reason).toBe('sandbox-failed');
    expect(JSON.parse(readFileSync(path.join(logDir, 'result.json'), 'utf8')).status).toBe('failed');
    expect(run.isActive).toBe(false);
  });
});
