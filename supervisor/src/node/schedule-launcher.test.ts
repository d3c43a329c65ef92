import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadCard } from '@runboard/project/project';
import { backoffOrColumnLimit } from './schedule-launcher.ts';

let dir: string | undefined;
afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

function project(cards: Record<string, string>): string {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-sched-launch-'));
  mkdirSync(path.join(dir, 'cards'));
  for (const [name, front] of Object.entries(cards))
    writeFileSync(path.join(dir, 'cards', name), `---\ntitle: ${name}\nflow: shell\n${front}---\n# Task\n`);
  return dir;
}

describe('a scheduled card started with no board open waits as the board would', () => {
  it('for its backoff', () => {
    const p = project({ 'a.md': 'nextTryAt: "2030-01-01T00:00:00.000Z"\n' });
    const card = loadCard(path.join(p, 'cards', 'a.md'), p);
    expect(backoffOrColumnLimit(p, card, {}, Date.parse('2029-12-31T00:00:00Z'))).toMatch(
      /^backoff: next try at 2030/,
    );
    expect(backoffOrColumnLimit(p, card, {}, Date.parse('2030-01-02T00:00:00Z'))).toBeUndefined();
  });

  it('for a full column, counted from the card files (a broken card counts in none)', () => {
    const p = project({
      'a.md': 'status: needs-input\n',
      'b.md': 'status: needs-input\n',
      'c.md': '',
    });
    writeFileSync(path.join(p, 'cards', 'broken.md'), 'no front matter');
    const card = loadCard(path.join(p, 'cards', 'c.md'), p);
    expect(backoffOrColumnLimit(p, card, { 'needs-input': 2 })).toMatch(
      /column "needs-input" holds 2 \(limit 2\)/,
    );
    expect(backoffOrColumnLimit(p, card, { 'needs-input': 3 })).toBeUndefined();
    expect(backoffOrColumnLimit(p, card, {})).toBeUndefined();
  });
});
