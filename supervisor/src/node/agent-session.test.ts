/**
 * What a run may leave in its HOME for the supervisor to keep: only its session's transcript, a
 * regular file found without following links (attacks: links to files and folders outside).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claudeProjectName, keepSession, keptDir, restoreSession } from './agent-session.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-session-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ID = '0f5c6a2e-1b7d-4c1e-9a55-3d1f2e4b6c7a';
let n = 0;
/** A fresh scratch dir, log dir and outside folder with a secret. */
function dirs() {
  const base = path.join(root, String(++n));
  const d = {
    scratch: path.join(base, 'scratch'),
    log: path.join(base, 'log'),
    outside: path.join(base, 'outside'),
  };
  for (const x of [d.log, d.outside, path.join(d.scratch, 'home')]) mkdirSync(x, { recursive: true });
  writeFileSync(path.join(d.outside, 'secret'), 'secret\n');
  return d;
}
const projectOf = (scratch: string, name = '-work-ws') =>
  path.join(scratch, 'home', '.claude', 'projects', name);

describe('an agent session kept across an ask', () => {
  it('keeps the transcript and puts it back under the new working directory', async () => {
    const d = dirs();
    mkdirSync(projectOf(d.scratch), { recursive: true });
    writeFileSync(path.join(projectOf(d.scratch), `${ID}.jsonl`), '{"type":"user"}\n');
    expect(await keepSession('claude', d.scratch, d.log, ID)).toBe(true);
    const next = path.join(root, 'next-scratch');
    await restoreSession('claude', d.log, ID, next, '/work/wt/new.tree');
    const restored = path.join(projectOf(next, claudeProjectName('/work/wt/new.tree')), `${ID}.jsonl`);
    expect(readFileSync(restored, 'utf8')).toBe('{"type":"user"}\n');
  });

  it('attack: a transcript that is a link to a file outside is not kept', async () => {
    const d = dirs();
    mkdirSync(projectOf(d.scratch), { recursive: true });
    symlinkSync(path.join(d.outside, 'secret'), path.join(projectOf(d.scratch), `${ID}.jsonl`));
    expect(await keepSession('claude', d.scratch, d.log, ID)).toBe(false);
  });

  it('attack: .claude, or a project folder, that is a link to a folder outside is not followed', async () => {
    const d = dirs();
    mkdirSync(path.join(d.outside, 'projects', 'p'), { recursive: true });
    writeFileSync(path.join(d.outside, 'projects', 'p', `${ID}.jsonl`), 'outside\n');
    symlinkSync(d.outside, path.join(d.scratch, 'home', '.claude'));
    expect(await keepSession('claude', d.scratch, d.log, ID)).toBe(false);
    const e = dirs();
    mkdirSync(path.join(e.scratch, 'home', '.claude', 'projects'), { recursive: true });
    mkdirSync(path.join(e.outside, 'p'));
    writeFileSync(path.join(e.outside, 'p', `${ID}.jsonl`), 'outside\n');
    symlinkSync(path.join(e.outside, 'p'), projectOf(e.scratch));
    expect(await keepSession('claude', e.scratch, e.log, ID)).toBe(false);
    await expect(restoreSession('claude', e.log, ID, path.join(root, 'x'), '/w')).rejects.toThrow(/not kept/);
    expect(keptDir(e.log)).toBe(path.join(e.log, 'agent-session'));
  });

  it('codex: the rollout is kept and put back where codex looks for it', async () => {
    const d = dirs();
    const day = path.join(d.scratch, 'home', '.codex', 'sessions', '2026', '11', '27');
    mkdirSync(day, { recursive: true });
    writeFileSync(path.join(day, `rollout-2026-11-27T10-00-00-${ID}.jsonl`), '{"type":"session_meta"}\n');
    expect(await keepSession('codex', d.scratch, d.log, ID)).toBe(true);
    const next = path.join(root, 'codex-next');
    await restoreSession('codex', d.log, ID, next, '/w');
    const back = path.join(
      next,
      'home',
      '.codex',
      'sessions',
      '2026',
      '11',
      '27',
      `rollout-2026-11-27T10-00-00-${ID}.jsonl`,
    );
    expect(readFileSync(back, 'utf8')).toBe('{"type":"session_meta"}\n');
    // a sessions folder that is a link is not followed
    const e = dirs();
    mkdirSync(path.join(e.scratch, 'home', '.codex'), { recursive: true });
    mkdirSync(path.join(e.outside, 'x'));
    writeFileSync(path.join(e.outside, 'x', `r-${ID}.jsonl`), 'outside\n');
    symlinkSync(e.outside, path.join(e.scratch, 'home', '.codex', 'sessions'));
    expect(await keepSession('codex', e.scratch, e.log, ID)).toBe(false);
  });
});
