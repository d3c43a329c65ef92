import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { gatherJudgeInput } from './judge-input.ts';

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A run's log folder as the supervisor leaves it: result.json and artifacts/. */
function runDir(id: string, card: string, status: string, files: Record<string, string> = {}): void {
  const dir = path.join(root, 'logs', id);
  mkdirSync(path.join(dir, 'artifacts'), { recursive: true });
  writeFileSync(
    path.join(dir, 'result.json'),
    JSON.stringify({
      runId: id,
      card: { path: card },
      status,
      summary: `${id} summary`,
      termination: { reason: 'finished', detail: 'd' },
    }),
  );
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(dir, 'artifacts', f), text);
}

describe('the judge input', () => {
  it("copies each attempt's end, report and last screenshot, in attempt order", async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'judge-input-'));
    runDir('a', '/p/cards/c.md', 'failed', {
      'report.md': 'A report',
      'step-000.jpg': 'a0',
      'step-001.jpg': 'a1',
    });
    runDir('b', '/p/cards/c.md', 'succeeded', { 'report.md': 'B report', 'step-002.jpg': 'b2' });
    const out = path.join(root, 'judge');
    await gatherJudgeInput(['b', 'a'], (id) => path.join(root, 'logs', id), '/p/cards/c.md', out);
    expect(JSON.parse(readFileSync(path.join(out, 'attempts/1/end.json'), 'utf8'))).toMatchObject({
      runId: 'b',
      status: 'succeeded',
    });
    expect(readFileSync(path.join(out, 'attempts/1/final.jpg'), 'utf8')).toBe('b2');
    expect(readFileSync(path.join(out, 'attempts/2/report.md'), 'utf8')).toBe('A report');
    expect(readFileSync(path.join(out, 'attempts/2/final.jpg'), 'utf8')).toBe('a1'); // the last step's
  });

  it("refuses a run of another card (a judge reads its own card's runs only) and a run still going", async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'judge-input-'));
    runDir('mine', '/p/cards/c.md', 'succeeded', { 'step-000.jpg': 'm' });
    runDir('other', '/p/cards/secret.md', 'succeeded', { 'step-000.jpg': 'secret screen' });
    runDir('going', '/p/cards/c.md', 'running');
    const out = path.join(root, 'judge');
    const logDirOf = (id: string): string => path.join(root, 'logs', id);
    await expect(gatherJudgeInput(['mine', 'other'], logDirOf, '/p/cards/c.md', out)).rejects.toThrow(
      /not an attempt of this card/,
    );
    expect(existsSync(path.join(out, 'attempts/2'))).toBe(false);
    await expect(gatherJudgeInput(['going'], logDirOf, '/p/cards/c.md', out)).rejects.toThrow(
      /has not ended/,
    );
    await expect(gatherJudgeInput(['nope'], logDirOf, '/p/cards/c.md', out)).rejects.toThrow(
      /no readable result/,
    );
  });
});
