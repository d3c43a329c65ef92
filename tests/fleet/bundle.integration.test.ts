/**
 * A supervisor in local mode does not load the fleet's code: BullMQ and ioredis (most of the
 * supervisor's bundle) are in a chunk that only a dynamic import reaches (fleet/backend.ts,
 * scripts/bundle.mjs), so every supervisor start on a machine without a fleet skips parsing them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DIST } from '../helpers/harness.ts';

/** The files Node loads when it starts `entry`: the entry and its static imports, transitively. */
function staticClosure(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*"(\.\.?\/[^"]+\.mjs)"/g))
      visit(path.resolve(path.dirname(file), m[1]!));
  };
  visit(entry);
  return [...seen];
}

describe("the supervisor's bundle", () => {
  it('loads BullMQ and ioredis only through the dynamic import of a fleet', () => {
    const eager = staticClosure(path.join(DIST, 'supervisor.mjs'));
    for (const f of eager) {
      const text = readFileSync(f, 'utf8');
      expect(text.includes('moveToActive'), `${f} holds BullMQ`).toBe(false);
      expect(text.includes('ioredis'), `${f} holds ioredis`).toBe(false);
    }
    // …and they are there, for a fleet.
    const gateway = readFileSync(path.join(DIST, 'supervisor.mjs'), 'utf8').match(
      /import\("(\.\/supervisor-chunks\/gateway-[^"]+\.mjs)"\)/,
    );
    expect(gateway).not.toBeNull();
    const lazy = staticClosure(path.join(DIST, gateway![1]!));
    expect(lazy.some((f) => readFileSync(f, 'utf8').includes('moveToActive'))).toBe(true);
  });
});
