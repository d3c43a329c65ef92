/**
 * What each card's front matter parsed to, kept between board start-ups. The `yaml` package takes
 * 50–170 µs per small card front matter (most of it before V8 has compiled it), which made parsing
 * 2,000 cards the largest part of a board's start (docs/bench-board.md). The key is the front matter's
 * exact text, so an entry can never be stale: the same text parses to the same value. Only the YAML
 * step is cached; the card schema still validates every card at every start, so a new version's
 * schema applies to cached values too.
 *
 * The file lives in the state root (hidden from runs: a run cannot make a card read as something its
 * file does not say). It is a cache: a missing, unreadable or malformed file is an empty cache, and a
 * write that fails (a full disk) costs only the next start's speed. A save keeps only the entries of the
 * cards as they are now (each card file's latest front matter), in memory and on disk, so neither grows
 * with the edits a long-lived board sees.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import YAML from 'yaml';

/** Bumped when what an entry means changes (a new `yaml` major version, other parse options). */
const FORMAT = 1;

export class CardParseCache {
  /** Front matter text → its parsed value as JSON text (parsed again on each hit: callers get their own copy). */
  private readonly entries = new Map<string, string>();
  /** Each card file's latest front matter text: what a save keeps. */
  private readonly current = new Map<string, string>();
  private changed = false;

  constructor(readonly file: string) {
    let stored: unknown;
    try {
      stored = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      return; // none yet, or unreadable: an empty cache
    }
    const s = stored as { format?: unknown; entries?: unknown };
    if (s?.format !== FORMAT || typeof s.entries !== 'object' || s.entries === null) return;
    for (const [k, v] of Object.entries(s.entries)) if (typeof v === 'string') this.entries.set(k, v);
  }

  /** The cache file of a project's board, in the state root. */
  static fileFor(stateRoot: string, projectDir: string): string {
    const key = createHash('sha256').update(path.resolve(projectDir)).digest('hex').slice(0, 24);
    return path.join(stateRoot, 'cache', 'cards', `${key}.json`);
  }

  /**
   * `YAML.parse(front)` for the card file `file`, from the cache when this text was parsed before.
   * Throws as YAML.parse does (a broken front matter is never cached).
   */
  parse(file: string, front: string): unknown {
    this.current.set(file, front);
    const hit = this.entries.get(front);
    if (hit !== undefined) return JSON.parse(hit);
    const value: unknown = YAML.parse(front, { prettyErrors: true });
    const json = JSON.stringify(value ?? null);
    // only values JSON carries exactly (not .inf, .nan, -0 …): anything else is parsed every time
    if (isDeepStrictEqual(JSON.parse(json), value ?? null)) {
      this.entries.set(front, json);
      this.changed = true;
    }
    return value;
  }

  /** The card file is gone: its entry goes at the next save. */
  forget(file: string): void {
    if (this.current.delete(file)) this.changed = true;
  }

  /**
   * Keeps the entries of the cards as they are now and writes them (atomically: a crash leaves the old
   * file or the new one) when anything changed. Failures are ignored: the cache only makes the next start
   * faster.
   */
  save(): void {
    const keep = new Set(this.current.values());
    const unused = [...this.entries.keys()].filter((k) => !keep.has(k));
    if (!this.changed && unused.length === 0) return;
    for (const k of unused) this.entries.delete(k);
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
      writeFileSync(tmp, JSON.stringify({ format: FORMAT, entries: Object.fromEntries(this.entries) }));
      renameSync(tmp, this.file);
      this.changed = false;
    } catch {
      try {
        rmSync(tmp, { force: true });
      } catch {
        // there was no folder to write in
      }
    }
  }
}
