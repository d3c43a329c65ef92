/**
 * Which card each run was for (RunRegistry, registry.ts), one JSON line per run (`{"runId","card"}`) in
 * `<logs>/.by-card/<YYYYMMDD>.jsonl`, so that listing one card's runs reads only its result.json files.
 * A day without an index file (runs from before the index) is indexed from its result.json files once.
 * The index is an optimisation: without it, listing falls back to reading result.json files.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import type { RunResult } from '../protocol/index.ts';

interface CardIndexEntry {
  runId: string;
  card: string;
}

/** Days of that index kept in memory (the ones asked about lately). */
const DAY_INDEX_MAX = 14;

export class CardIndex {
  /** Parsed day indexes, reused while the file's size is unchanged. */
  private readonly dayIndex = new Map<string, { size: number; entries: CardIndexEntry[] }>();

  constructor(
    private readonly logsDir: string,
    /** A run's record on disk, or null. */
    private readonly readResult: (runId: string) => RunResult | null,
  ) {}

  /** Records that run `runId` (of today) is a run of `card`. */
  add(runId: string, card: string): void {
    try {
      const file = this.ensureDayIndex(runId.slice(0, 8), runId);
      // one small O_APPEND write: a crash leaves whole lines (a torn last line is skipped on read)
      appendFileSync(file, JSON.stringify({ runId, card }) + '\n', { mode: 0o600 });
    } catch {
      // the index is an optimisation: without it, listing falls back to reading result.json files
    }
  }

  /** Run ids of `card` on `day`, newest first (undefined: no usable index, scan the day). */
  runsOf(day: string, card: string): string[] | undefined {
    let file: string;
    try {
      file = this.ensureDayIndex(day);
    } catch {
      return undefined;
    }
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return undefined;
    }
    let cached = this.dayIndex.get(day);
    if (!cached || cached.size !== size) {
      const entries: CardIndexEntry[] = [];
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (!line) continue;
        try {
          const e = JSON.parse(line) as CardIndexEntry;
          if (typeof e.runId === 'string' && typeof e.card === 'string') entries.push(e);
        } catch {
          // a torn line
        }
      }
      cached = { size, entries };
      this.dayIndex.delete(day);
      this.dayIndex.set(day, cached);
      // a supervisor may live for months: keep the days asked about lately, not every day ever
      if (this.dayIndex.size > DAY_INDEX_MAX) this.dayIndex.delete(this.dayIndex.keys().next().value!);
    }
    return cached.entries
      .filter((e) => e.card === card)
      .map((e) => e.runId)
      .sort()
      .reverse();
  }

  private indexFile(day: string): string {
    return path.join(this.logsDir, '.by-card', `${day}.jsonl`);
  }

  /** The day's index, built from its result.json files when it has none yet (older runs). */
  private ensureDayIndex(day: string, except?: string): string {
    const file = this.indexFile(day);
    if (existsSync(file)) return file;
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    let ids: string[] = [];
    try {
      ids = readdirSync(path.join(this.logsDir, day)).sort();
    } catch {
      // no runs that day yet
    }
    const lines = ids
      .filter((id) => id !== except)
      .map((id) => this.readResult(id))
      .filter((r): r is RunResult => r !== null)
      .map((r) => JSON.stringify({ runId: r.runId, card: r.card.path }) + '\n');
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, lines.join(''), { mode: 0o600 });
    renameSync(tmp, file);
    return file;
  }
}
