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

  it("loads the fleet's job schemas, inputs and artifacts only with a fleet", () => {
    // The sources of each file, from its source map: the start checks a fleet's Redis URL
    // (fleet/redis-url.ts) without evaluating the job's zod schemas.
    const sources = (files: string[]): string[] =>
      files.flatMap((f) => (JSON.parse(readFileSync(`${f}.map`, 'utf8')) as { sources: string[] }).sources);
    const fleetOnly = /supervisor\/src\/node\/fleet\/(job|inputs|artifacts)\.ts$/;
    const eager = sources(staticClosure(path.join(DIST, 'supervisor.mjs')));
    expect(eager.some((s) => s.endsWith('fleet/redis-url.ts'))).toBe(true);
    expect(eager.filter((s) => fleetOnly.test(s))).toEqual([]);
    const gateway = readFileSync(path.join(DIST, 'supervisor.mjs'), 'utf8').match(
      /import\("(\.\/supervisor-chunks\/gateway-[^"]+\.mjs)"\)/,
    );
    const lazy = sources(staticClosure(path.join(DIST, gateway![1]!)));
    expect(lazy.filter((s) => fleetOnly.test(s)).length).toBe(3);
  });
});
