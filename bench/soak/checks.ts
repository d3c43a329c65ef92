/**
 * The soak's invariants, checked at the end (docs/soak.md): every card settled with a reason a person
 * can read; none left Running; no run counted twice; no orphaned process or display; every run's log
 * complete (a killed run's up to its kill); supervisor and board memory flat.
 */
import path from 'node:path';
import { readOutputInOrder } from '@runboard/supervisor/run-output';
import type { Proc, ProcKind } from './chaos.ts';
import type { SoakCard } from './cards.ts';

export interface BoardCard {
  id: string;
  column: string;
  runId?: string;
  lastError?: string;
  openQuestions?: number;
  failures?: number;
  waiting?: string;
  confirm?: { reason: string };
}

export interface RunRow {
  runId: string;
  status: string;
  card: { path: string; title?: string };
  logDir: string;
  startedAt: string;
  endedAt: string | null;
  stdoutBytes: number;
  exitCode: number | null;
  termination: { reason: string; detail: string } | null;
  summary?: string;
}

export interface Invariant {
  name: string;
  held: boolean;
  detail: string;
  /** false: nothing to judge it by in this soak (counted neither held nor broken, and said so) */
  measured?: boolean;
}

/** A reason a person can read: words, not a stack, not an object's default text, not empty. */
export function readableReason(s: string | undefined): boolean {
  if (!s || s.trim().length < 8 || !/[a-z]{3,} [a-z]{2,}/i.test(s)) return false;
  return !/\[object |\bundefined\b|^\s*at .+:\d+:\d+|\n\s+at .+:\d+:\d+/m.test(s);
}

/**
 * What a command card's stdout must be: `<id> 1` … `<id> N` then `<id> END`. Complete: all of it.
 * Cut (a run that did not succeed): a prefix of it, nothing missing, repeated or out of order (the last
 * line may stop short where the kill cut it).
 */
export function checkCommandLog(
  id: string,
  lines: number,
  text: string,
  mustBeComplete: boolean,
): string | undefined {
  const got = text.split('\n');
  const lastCut = got[got.length - 1] !== '';
  if (!lastCut) got.pop();
  const want = (i: number): string => (i < lines ? `${id} ${i + 1}` : `${id} END`);
  for (let i = 0; i < got.length; i++) {
    if (i > lines) return `line ${i + 1} is past the END line: "${got[i]!.slice(0, 60)}"`;
    if (got[i] === want(i)) continue;
    if (i === got.length - 1 && lastCut && want(i).startsWith(got[i]!) && !mustBeComplete) continue;
    return `line ${i + 1} is "${got[i]!.slice(0, 60)}", expected "${want(i)}"`;
  }
  if (mustBeComplete && (got.length !== lines + 1 || lastCut))
    return `has ${got.length} of ${lines + 1} lines${lastCut ? ' (the last one cut)' : ''}`;
  return undefined;
}

async function stdoutOf(logDir: string): Promise<{ text: string; bytes: number }> {
  const parts: Buffer[] = [];
  await readOutputInOrder(logDir, (stream, data) => {
    if (stream === 'stdout') parts.push(Buffer.from(data));
  });
  const buf = Buffer.concat(parts);
  return { text: buf.toString('utf8'), bytes: buf.length };
}

/** Memory of the longest-lived supervisor and board: median of its first and last quarters (after a minute's warm-up). */
export function memoryFigure(
  memory: Map<number, { kind: ProcKind; samples: [number, number][] }>,
  kind: ProcKind,
): { held: boolean; detail: string; measured?: boolean } {
  const lives = [...memory].filter(([, m]) => m.kind === kind);
  if (!lives.length) return { held: false, detail: `no ${kind} was ever seen` };
  const span = (s: [number, number][]): number => (s.length ? s[s.length - 1]![0] - s[0]![0] : 0);
  const [pid, longest] = lives.sort((a, b) => span(b[1].samples) - span(a[1].samples))[0]!;
  const warm = longest.samples.filter(([t]) => t - longest.samples[0]![0] >= 60_000);
  const mins = (span(longest.samples) / 60_000).toFixed(1);
  if (warm.length < 20 || span(warm) < 120_000)
    return {
      held: true,
      measured: false,
      detail: `not measurable: its longest life (pid ${pid}) was ${mins} min (${lives.length} lives); needs 3`,
    };
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const q = Math.max(3, Math.floor(warm.length / 4));
  const first = median(warm.slice(0, q).map(([, k]) => k));
  const last = median(warm.slice(-q).map(([, k]) => k));
  const mib = (k: number): string => `${(k / 1024).toFixed(0)} MiB`;
  const peak = Math.max(...lives.flatMap(([, m]) => m.samples.map(([, k]) => k)));
  // flat: the last quarter within 25 % (and 32 MiB) of the first, on the longest life
  const held = last <= first * 1.25 || last - first <= 32 * 1024;
  return {
    held,
    detail: `pid ${pid} over ${mins} min: ${mib(first)} → ${mib(last)} (${(((last - first) / first) * 100).toFixed(0)} %); ${lives.length} lives, peak of all ${mib(peak)}`,
  };
}

export async function checkInvariants(s: {
  cards: BoardCard[];
  fed: Set<string>;
  byId: Map<string, SoakCard>;
  runs: RunRow[];
  orphans: Proc[];
  memory: Map<number, { kind: ProcKind; samples: [number, number][] }>;
}): Promise<Invariant[]> {
  const out: Invariant[] = [];
  const mine = s.cards.filter((c) => s.fed.has(c.id) || c.id === 'tick');
  const list = (xs: string[], n = 6): string =>
    xs.length ? `${xs.slice(0, n).join('; ')}${xs.length > n ? `; … (${xs.length})` : ''}` : '';

  // 1. settled, with a reason a person can read
  const unsettled = mine.filter(
    (c) => !['done', 'failed', 'needs-input'].includes(c.column) && c.id !== 'tick',
  );
  out.push({
    name: 'every card settles (Done, Failed or Needs input)',
    held: unsettled.length === 0 && mine.length > 0,
    detail: unsettled.length
      ? list(
          unsettled.map(
            (c) =>
              `${c.id} in ${c.column}${c.waiting ? ` (waiting: ${c.waiting})` : ''}${c.confirm ? ` (confirm: ${c.confirm.reason})` : ''}`,
          ),
        )
      : `${mine.length} cards`,
  });
  const unreadable = mine.filter(
    (c) =>
      (c.column === 'failed' && !readableReason(c.lastError)) ||
      (c.column === 'needs-input' && !(c.openQuestions ?? 0) && !readableReason(c.lastError)),
  );
  const columns = new Map<string, number>();
  for (const c of mine) columns.set(c.column, (columns.get(c.column) ?? 0) + 1);
  out.push({
    name: 'each Failed / Needs input card says why in words',
    held: unreadable.length === 0,
    detail: unreadable.length
      ? list(unreadable.map((c) => `${c.id} (${c.column}): ${JSON.stringify(c.lastError ?? null)}`))
      : [...columns].map(([k, v]) => `${k} ${v}`).join(', '),
  });

  // 2. nothing left running
  const running = [
    ...mine.filter((c) => c.column === 'running').map((c) => `card ${c.id}`),
    ...s.runs.filter((r) => r.status === 'running' || r.endedAt === null).map((r) => `run ${r.runId}`),
  ];
  out.push({
    name: 'no card or run left Running',
    held: running.length === 0,
    detail: list(running) || 'none',
  });

  // 3. no run counted twice
  const twice: string[] = [];
  const ids = new Set<string>();
  for (const r of s.runs) {
    if (ids.has(r.runId)) twice.push(`run ${r.runId} listed twice`);
    ids.add(r.runId);
  }
  const perCard = new Map<string, RunRow[]>();
  for (const r of s.runs) {
    const id = path.basename(r.card.path, '.md');
    perCard.set(id, [...(perCard.get(id) ?? []), r]);
  }
  for (const [id, rs] of perCard) {
    const sorted = [...rs].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    for (let i = 1; i < sorted.length; i++) {
      const prevEnd = sorted[i - 1]!.endedAt;
      if (prevEnd === null || prevEnd > sorted[i]!.startedAt)
        twice.push(`${id}: runs ${sorted[i - 1]!.runId} and ${sorted[i]!.runId} overlap`);
    }
    if (id === 'tick') continue;
    const ok = rs.filter((r) => r.status === 'succeeded');
    if (ok.length > 1) twice.push(`${id}: ${ok.length} succeeded runs`);
    if (rs.length > 2) twice.push(`${id}: ${rs.length} runs (queued once, 1 retry allowed)`);
    if (!s.fed.has(id)) twice.push(`${id}: ran though never queued`);
  }
  for (const c of mine.filter((c) => c.column === 'done' && c.id !== 'tick')) {
    const r = s.runs.find((x) => x.runId === c.runId);
    if (!r || r.status !== 'succeeded')
      twice.push(`${c.id} in Done but its run ${c.runId} is ${r?.status ?? 'unknown'}`);
  }
  out.push({
    name: 'no run counted twice',
    held: twice.length === 0,
    detail: list(twice) || `${s.runs.length} runs, ${perCard.size} cards with runs`,
  });

  // 4. no orphans
  out.push({
    name: 'no orphaned process or display',
    held: s.orphans.length === 0,
    detail: list(s.orphans.map((p) => `${p.kind} ${p.pid}: ${p.cmd.slice(0, 90)}`)) || 'none',
  });

  // 5. logs complete (a run that did not succeed: complete up to where it stopped)
  const bad: string[] = [];
  let checked = 0;
  for (const r of s.runs) {
    const card = s.byId.get(path.basename(r.card.path, '.md'));
    try {
      const { text, bytes } = await stdoutOf(r.logDir);
      checked++;
      if (bytes !== r.stdoutBytes)
        bad.push(`${r.runId}: ${bytes} bytes in the log, the run counted ${r.stdoutBytes}`);
      if (card?.kind !== 'command') continue;
      const why = checkCommandLog(
        card.id,
        card.lines!,
        text,
        r.status === 'succeeded' || (r.exitCode === 3 && !!card.fails),
      );
      if (why) bad.push(`${r.runId} (${card.id}, ${r.status}/${r.termination?.reason}): ${why}`);
    } catch (e) {
      bad.push(`${r.runId}: the log cannot be read: ${(e as Error).message}`);
    }
  }
  out.push({
    name: "every run's log complete (a killed run's up to its kill)",
    held: bad.length === 0,
    detail: list(bad) || `${checked} logs read`,
  });

  // 6. memory flat
  for (const kind of ['supervisor', 'serve'] as const) {
    const m = memoryFigure(s.memory, kind);
    out.push({ name: `${kind === 'serve' ? 'board (serve)' : 'supervisor'} memory flat`, ...m });
  }
  return out;
}
