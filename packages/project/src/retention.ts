/**
 * The retention policy of config.yaml (`retention:`) and the pure plan `runboard gc` follows: which
 * run logs (with their artifacts) and recordings go, and why. What is live (a run going, a recording
 * being made) or still named by a card is never in the plan; the newest `keepPerCard` runs of each
 * card stay whatever their age or size. Disk reads and removals are the host's (host/src/core/gc.ts).
 */
import { z } from 'zod';

const DAY_MS = 86_400_000;
const AGE_UNITS = { h: 3_600_000, d: DAY_MS, w: 7 * DAY_MS } as const;
const SIZE_UNITS = { k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 } as const;

/** "12h", "30d", "8w": how old an ended run or recording may get. */
const Age = z.string().transform((v, ctx) => {
  const m = /^(\d+(?:\.\d+)?)\s*([hdw])$/.exec(v.trim());
  const ms = m ? Math.round(Number(m[1]) * AGE_UNITS[m[2] as keyof typeof AGE_UNITS]) : 0;
  if (ms > 0) return ms;
  ctx.addIssue({
    code: 'custom',
    message: `expected an age such as 12h, 30d or 8w (got ${JSON.stringify(v)})`,
  });
  return z.NEVER;
});

/** "500m", "5g", "1t": how much the run logs, artifacts and recordings may hold together. */
const Size = z.string().transform((v, ctx) => {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt])(?:i?b)?$/i.exec(v.trim());
  const bytes = m ? Math.round(Number(m[1]) * SIZE_UNITS[m[2]!.toLowerCase() as keyof typeof SIZE_UNITS]) : 0;
  if (bytes > 0) return bytes;
  ctx.addIssue({
    code: 'custom',
    message: `expected a size such as 500m, 5g or 1t (got ${JSON.stringify(v)})`,
  });
  return z.NEVER;
});

/** "30m", "1h", "1d": how often the supervisor applies the policy by itself (at least a minute). */
const Interval = z.string().transform((v, ctx) => {
  const m = /^(\d+(?:\.\d+)?)\s*([mhd])$/.exec(v.trim());
  const unit = { m: 60_000, h: 3_600_000, d: DAY_MS } as const;
  const ms = m ? Math.round(Number(m[1]) * unit[m[2] as keyof typeof unit]) : 0;
  if (ms >= 60_000 && ms <= 30 * DAY_MS) return ms;
  ctx.addIssue({
    code: 'custom',
    message: `expected an interval from 1m to 30d such as 30m, 1h or 1d (got ${JSON.stringify(v)})`,
  });
  return z.NEVER;
});

/** "5%", "2g", "500m", "0": the free space below which the supervisor prunes at once (0: never). */
const MinFree = z.union([z.string(), z.number()]).transform((v, ctx): MinFreeSpec => {
  const t = String(v).trim();
  if (t === '0') return { bytes: 0 };
  const pct = /^(\d+(?:\.\d+)?)\s*%$/.exec(t);
  if (pct && Number(pct[1]) > 0 && Number(pct[1]) <= 50) return { percent: Number(pct[1]) };
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt])(?:i?b)?$/i.exec(t);
  const bytes = m ? Math.round(Number(m[1]) * SIZE_UNITS[m[2]!.toLowerCase() as keyof typeof SIZE_UNITS]) : 0;
  if (bytes > 0) return { bytes };
  ctx.addIssue({
    code: 'custom',
    message: `expected a share of the disk up to 50% (5%), a size (500m, 2g) or 0 for never (got ${JSON.stringify(v)})`,
  });
  return z.NEVER;
});

/** Free space wanted on the state root's disk: a share of it or bytes ({bytes: 0}: never pruned for space). */
export type MinFreeSpec = { percent: number } | { bytes: number };

/** config.yaml's `retention:` (docs/user-guide.md, "Disk"). Unset keys take RETENTION_DEFAULTS. */
export const Retention = z.object({
  /** The supervisor applies the policy by itself (default true); false: only `runboard gc --yes`. */
  auto: z.boolean().optional(),
  /** How often it does (default 1h). */
  interval: Interval.optional(),
  /** Below this free space on the state root's disk it prunes at once, past the policy (default 2%). */
  minFree: MinFree.optional(),
  /** Ended runs and recordings older than this are removed (default 30d). */
  maxAge: Age.optional(),
  /** Beyond this total, the oldest removable ones go until it fits (default: no size limit). */
  maxSize: Size.optional(),
  /** The newest N runs of every card are kept whatever their age or size (default 5). */
  keepPerCard: z.number().int().min(0).max(100_000).optional(),
});
export type Retention = z.output<typeof Retention>;

export interface RetentionPolicy {
  maxAgeMs: number;
  maxBytes: number | undefined;
  keepPerCard: number;
  auto: boolean;
  intervalMs: number;
  minFree: MinFreeSpec;
}

export const RETENTION_DEFAULTS: RetentionPolicy = {
  maxAgeMs: 30 * DAY_MS,
  maxBytes: undefined,
  keepPerCard: 5,
  auto: true,
  intervalMs: 3_600_000,
  minFree: { percent: 2 },
};

export function retentionPolicy(r: Retention | undefined): RetentionPolicy {
  return {
    maxAgeMs: r?.maxAge ?? RETENTION_DEFAULTS.maxAgeMs,
    maxBytes: r?.maxSize ?? RETENTION_DEFAULTS.maxBytes,
    keepPerCard: r?.keepPerCard ?? RETENTION_DEFAULTS.keepPerCard,
    auto: r?.auto ?? RETENTION_DEFAULTS.auto,
    intervalMs: r?.interval ?? RETENTION_DEFAULTS.intervalMs,
    minFree: r?.minFree ?? RETENTION_DEFAULTS.minFree,
  };
}

/** The free bytes wanted on a disk of `total` bytes (0: never pruned for space). */
export function minFreeBytes(spec: MinFreeSpec, total: number): number {
  return 'percent' in spec ? Math.round((total * spec.percent) / 100) : spec.bytes;
}

/** A run's log folder or a recording, as gc found it on disk. */
export interface StoredItem {
  /** A copy: a workspace copy an attempt worked in (issue 33), never kept or discarded. */
  kind: 'run' | 'recording' | 'copy';
  id: string;
  /** Runs: the card they ran (its id, else its file); the newest keepPerCard of each are kept. */
  card?: string;
  /** When it ended (ms since the epoch); a live one has none. */
  endedAt: number | undefined;
  bytes: number;
  /** A run going or a recording being made: never removed. */
  live: boolean;
  /** Named by a card (its front matter or workflow): never removed. */
  referenced: boolean;
  /** A run whose worktree or workspace copy is neither kept nor discarded: never removed. */
  unsettled?: boolean;
}

export type KeepReason = 'live' | 'referenced' | 'unsettled' | 'last-of-card' | 'within-policy';
export type RemoveReason = 'age' | 'size';

export interface RetentionPlan {
  remove: { item: StoredItem; reason: RemoveReason }[];
  keep: { item: StoredItem; reason: KeepReason }[];
  bytesBefore: number;
  bytesAfter: number;
  /** Still above maxSize after every removable one went (what is left is live, named or kept per card). */
  overSize: boolean;
}

/** What goes and what stays under `policy` at time `now`. Pure: reads and removes nothing. */
export function planRetention(
  items: StoredItem[],
  policy: Pick<RetentionPolicy, 'maxAgeMs' | 'maxBytes' | 'keepPerCard'>,
  now: number,
): RetentionPlan {
  const lastOfCard = new Set<StoredItem>();
  const byCard = new Map<string, StoredItem[]>();
  for (const it of items)
    if (it.kind === 'run' && it.card !== undefined) byCard.set(it.card, [...(byCard.get(it.card) ?? []), it]);
  for (const runs of byCard.values()) {
    // newest first; a live run (no end yet) counts as the newest
    runs.sort((a, b) => (b.endedAt ?? Infinity) - (a.endedAt ?? Infinity));
    for (const r of runs.slice(0, policy.keepPerCard)) lastOfCard.add(r);
  }
  const keepReason = (it: StoredItem): KeepReason | undefined =>
    it.live || it.endedAt === undefined
      ? 'live'
      : it.referenced
        ? 'referenced'
        : it.unsettled
          ? 'unsettled'
          : lastOfCard.has(it)
            ? 'last-of-card'
            : undefined;
  const removed = new Map<StoredItem, RemoveReason>();
  for (const it of items)
    if (!keepReason(it) && it.endedAt !== undefined && now - it.endedAt > policy.maxAgeMs)
      removed.set(it, 'age');
  const bytesBefore = items.reduce((s, it) => s + it.bytes, 0);
  let left = bytesBefore - [...removed.keys()].reduce((s, it) => s + it.bytes, 0);
  if (policy.maxBytes !== undefined && left > policy.maxBytes) {
    const oldestFirst = items
      .filter((it) => !keepReason(it) && !removed.has(it))
      .sort((a, b) => a.endedAt! - b.endedAt!);
    for (const it of oldestFirst) {
      if (left <= policy.maxBytes) break;
      removed.set(it, 'size');
      left -= it.bytes;
    }
  }
  return {
    remove: [...removed].map(([item, reason]) => ({ item, reason })),
    keep: items
      .filter((it) => !removed.has(it))
      .map((item) => ({ item, reason: keepReason(item) ?? 'within-policy' })),
    bytesBefore,
    bytesAfter: left,
    overSize: policy.maxBytes !== undefined && left > policy.maxBytes,
  };
}

/** 1536 → "1.5 KiB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
