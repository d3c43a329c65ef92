import { describe, expect, it } from 'vitest';
import {
  planRetention,
  Retention,
  retentionPolicy,
  minFreeBytes,
  RETENTION_DEFAULTS,
  type StoredItem,
} from './retention.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 27);
const run = (id: string, card: string, daysAgo: number, extra: Partial<StoredItem> = {}): StoredItem => ({
  kind: 'run',
  id,
  card,
  endedAt: NOW - daysAgo * DAY,
  bytes: 100,
  live: false,
  referenced: false,
  ...extra,
});
const removed = (items: StoredItem[], policy: Parameters<typeof planRetention>[1] = RETENTION_DEFAULTS) =>
  planRetention(items, policy, NOW).remove.map((r) => `${r.item.id}:${r.reason}`);

describe('retention policy (config.yaml retention:)', () => {
  it('reads ages and sizes, and says what it expected otherwise', () => {
    expect(Retention.parse({ maxAge: '12h', maxSize: '1.5g', keepPerCard: 2 })).toEqual({
      maxAge: 12 * 3_600_000,
      maxSize: Math.round(1.5 * 1024 ** 3),
      keepPerCard: 2,
    });
    expect(Retention.parse({ maxAge: '2w', maxSize: '500MiB' })).toEqual({
      maxAge: 14 * DAY,
      maxSize: 500 * 1024 ** 2,
    });
    expect(Retention.safeParse({ maxAge: '30 days' }).error?.issues[0]?.message).toBe(
      'expected an age such as 12h, 30d or 8w (got "30 days")',
    );
    expect(Retention.safeParse({ maxSize: '0g' }).error?.issues[0]?.message).toBe(
      'expected a size such as 500m, 5g or 1t (got "0g")',
    );
    expect(Retention.safeParse({ keepPerCard: -1 }).success).toBe(false);
    expect(retentionPolicy(undefined)).toEqual({
      maxAgeMs: 30 * DAY,
      maxBytes: undefined,
      keepPerCard: 5,
      auto: true,
      intervalMs: 3_600_000,
      minFree: { percent: 2 },
    });
    expect(retentionPolicy({ keepPerCard: 0 }).keepPerCard).toBe(0);
  });

  it('reads when the supervisor applies it by itself, and says what it expected otherwise', () => {
    expect(Retention.parse({ auto: false, interval: '30m', minFree: '5%' })).toEqual({
      auto: false,
      interval: 30 * 60_000,
      minFree: { percent: 5 },
    });
    expect(Retention.parse({ minFree: '512m' }).minFree).toEqual({ bytes: 512 * 1024 ** 2 });
    expect(Retention.parse({ minFree: 0 }).minFree).toEqual({ bytes: 0 });
    expect(Retention.safeParse({ interval: '10s' }).error?.issues[0]?.message).toBe(
      'expected an interval from 1m to 30d such as 30m, 1h or 1d (got "10s")',
    );
    expect(Retention.safeParse({ minFree: '80%' }).error?.issues[0]?.message).toBe(
      'expected a share of the disk up to 50% (5%), a size (500m, 2g) or 0 for never (got "80%")',
    );
    expect(Retention.safeParse({ auto: 'yes' }).success).toBe(false);
    expect(minFreeBytes({ percent: 2 }, 1000)).toBe(20);
    expect(minFreeBytes({ bytes: 7 }, 1000)).toBe(7);
  });

  it('keeps a run whose worktree or workspace copy is not settled, whatever its age', () => {
    expect(
      removed([run('u1', 'U', 90, { unsettled: true }), run('u2', 'U', 80)], {
        ...RETENTION_DEFAULTS,
        keepPerCard: 0,
      }),
    ).toEqual(['u2:age']);
  });
});

describe('the retention plan', () => {
  it('removes what is older than maxAge, beyond the last keepPerCard runs of each card', () => {
    const items = [run('a1', 'A', 40), run('a2', 'A', 35), run('a3', 'A', 1), run('b1', 'B', 50)];
    expect(removed(items, { maxAgeMs: 30 * DAY, maxBytes: undefined, keepPerCard: 1 })).toEqual([
      'a1:age',
      'a2:age',
    ]);
    // b1 is the last run of card B: kept however old
    const plan = planRetention(items, { maxAgeMs: 30 * DAY, maxBytes: undefined, keepPerCard: 1 }, NOW);
    expect(plan.keep.map((k) => `${k.item.id}:${k.reason}`)).toEqual(['a3:last-of-card', 'b1:last-of-card']);
    expect(plan.bytesBefore).toBe(400);
    expect(plan.bytesAfter).toBe(200);
  });

  it('over maxSize removes the oldest removable ones until it fits', () => {
    const items = [run('a1', 'A', 3), run('a2', 'A', 2), run('a3', 'A', 1), run('a4', 'A', 0)];
    expect(removed(items, { maxAgeMs: 30 * DAY, maxBytes: 250, keepPerCard: 0 })).toEqual([
      'a1:size',
      'a2:size',
    ]);
  });

  it('never removes a live run, a recording being made or anything a card names, and says when it cannot fit', () => {
    const items: StoredItem[] = [
      run('live', 'A', 0, { live: true, endedAt: undefined }),
      run('named', 'A', 99, { referenced: true }),
      { kind: 'recording', id: 'rec-new', endedAt: undefined, bytes: 5000, live: true, referenced: false },
      {
        kind: 'recording',
        id: 'rec-old',
        endedAt: NOW - 99 * DAY,
        bytes: 100,
        live: false,
        referenced: false,
      },
      {
        kind: 'recording',
        id: 'rec-named',
        endedAt: NOW - 99 * DAY,
        bytes: 100,
        live: false,
        referenced: true,
      },
    ];
    const plan = planRetention(items, { maxAgeMs: DAY, maxBytes: 1, keepPerCard: 0 }, NOW);
    expect(plan.remove.map((r) => r.item.id)).toEqual(['rec-old']);
    expect(Object.fromEntries(plan.keep.map((k) => [k.item.id, k.reason]))).toEqual({
      live: 'live',
      named: 'referenced',
      'rec-new': 'live',
      'rec-named': 'referenced',
    });
    expect(plan.overSize).toBe(true);
  });

  it('a live run counts as the newest of its card', () => {
    const items = [run('old', 'A', 40), run('live', 'A', 0, { live: true, endedAt: undefined })];
    expect(removed(items, { maxAgeMs: 30 * DAY, maxBytes: undefined, keepPerCard: 1 })).toEqual(['old:age']);
  });
});
