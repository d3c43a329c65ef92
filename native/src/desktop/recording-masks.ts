// What the recorder (recording.ts) keeps out of its screenshots and video: every password field it has
// seen, and every field the person said holds a secret when the recording began (`secretFields`, by
// accessible name), per window, in every window on screen at a screenshot's instant (decision 136:
// recording-screen.ts says which windows those are and reads the ones not read yet). A field's reported
// bounds change with its content: every rectangle seen is kept, a stale one only masks more.
import { existsSync, rmSync, statSync } from 'node:fs';
import { secrets } from './recording-elements.ts';
import type { Element, ReadResult, Rect, WindowInfo } from './types.ts';
import { maskVideo, type VideoResult } from './video.ts';

/** What the desktop said about the window an event went to (a step's read). */
export interface Lookup {
  tree?: ReadResult;
  window?: WindowInfo;
  /** Why the tree could not be read (when it could not). */
  error?: string;
}

/** What the secret test looks at: an element of a read, or a focus change. */
export type SecretProbe = Pick<Element, 'secret' | 'editable' | 'name'>;

/** A field's name as `secretFields` compares it: trimmed, case and inner spacing ignored. */
export function fieldKey(name: string): string {
  return name.trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * The test for a secret field: a password field, or an editable one whose accessible name is in
 * `names` (a PIN typed into a plain field the person named when starting the recording).
 */
export function secretTest(names: readonly string[] = []): (e: SecretProbe) => boolean {
  const keys = new Set(names.map(fieldKey).filter((k) => k !== ''));
  if (keys.size === 0) return (e) => e.secret;
  return (e) => e.secret || (e.editable && keys.has(fieldKey(e.name)));
}

/**
 * A window as the recording knows it, from the listings, the reads and its maps and moves: one per
 * window's life on screen (X hands a closed window's id to the next one at once, decision 140).
 */
export interface KnownWindow {
  id: number;
  /** Each field's rectangle relative to the window's top-left corner at the read that found it. */
  fields: Map<string, Rect>;
  /** A read of it answered (its fields are known; maybe none). */
  answered: boolean;
  /** Its last read failed: it cannot be checked, so it is not shown (decision 140). */
  unread: boolean;
  /** Where it was at the last screenshot that masked it. */
  at?: Rect;
  /** Every rectangle it had on screen (listings, reads, its maps and moves), and whether it was unread then. */
  places: Map<string, { bounds: Rect; unread: boolean }>;
}

function placeIn(k: KnownWindow, bounds: Rect): void {
  const key = `${bounds.join(',')}:${k.unread}`;
  if (!k.places.has(key)) k.places.set(key, { bounds, unread: k.unread });
}

/**
 * What a window calls for in the video: its secret fields at every place it had; the whole of it at
 * each place where it was unread, and at every place when no read of it ever answered (a window opened
 * and closed between two listings, one that never answers).
 */
function placesOf(k: KnownWindow): Rect[] {
  const out: Rect[] = [];
  for (const { bounds: b, unread } of k.places.values()) {
    if (unread || !k.answered) out.push(b);
    for (const [x, y, w, h] of k.fields.values()) out.push([x + b[0], y + b[1], w, h]);
  }
  return out;
}

const area = ([, , w, h]: Rect): number => Math.max(0, w) * Math.max(0, h);

/**
 * Fewer rectangles covering at least the same points: one merged into another when their bounding box
 * is no larger than the two apart (a dragged window's fields at each step of the drag overlap: they
 * become one box over the path; a window moved far keeps two).
 */
export function cover(rects: Rect[]): Rect[] {
  const boxes: Rect[] = [];
  for (const r of rects) {
    if (area(r) === 0) continue;
    let into = r;
    for (let i = 0; i < boxes.length;) {
      const b = boxes[i]!;
      const x = Math.min(b[0], into[0]);
      const y = Math.min(b[1], into[1]);
      const u: Rect = [
        x,
        y,
        Math.max(b[0] + b[2], into[0] + into[2]) - x,
        Math.max(b[1] + b[3], into[1] + into[3]) - y,
      ];
      if (area(u) <= area(b) + area(into)) {
        boxes.splice(i, 1);
        into = u;
        i = 0; // the bigger box may now take one seen before
      } else i++;
    }
    boxes.push(into);
  }
  return boxes;
}

export class SecretFields {
  /** window id → the window that has the id now (not closed since, as far as the server said). */
  private readonly current = new Map<number, KnownWindow>();
  /** Every window the recording knew, closed ones too: the video's masks. */
  private readonly every = new Set<KnownWindow>();
  /** The windows the last screenshot masked (a window not in the next one has closed: masked once more). */
  private readonly shown = new Set<KnownWindow>();
  /** Every rectangle (screen coordinates) a screenshot masked. */
  private readonly masked = new Map<string, Rect>();
  readonly isSecret: (e: SecretProbe) => boolean;

  /** The roles a secret field can have: password fields; with fields named secret, the editable ones. */
  readonly roles: string[];

  constructor(names: readonly string[] = []) {
    this.isSecret = secretTest(names);
    this.roles = names.some((n) => fieldKey(n) !== '')
      ? ['password text', 'text', 'entry', 'spin button']
      : ['password text'];
  }

  /** What is known of the window that has this id now. */
  record(id: number): KnownWindow {
    let k = this.current.get(id);
    if (!k) {
      k = { id, fields: new Map(), answered: false, unread: false, places: new Map() };
      this.current.set(id, k);
      this.every.add(k);
    }
    return k;
  }

  /** The server said the window closed (or was hidden): its id may come back as another window's. */
  gone(id: number): void {
    this.current.delete(id);
  }

  /**
   * A read answered or failed (as it happens, not when a screenshot is made): a failed one leaves the
   * window unread, grey whole where it is, until a read of it answers (decision 140).
   */
  note(windowId: number, l: Lookup): void {
    if (l.tree) this.learn(l.tree);
    else if (windowId) this.record(windowId).unread = true;
  }

  /** The window is at `bounds` now (a listing, or its map or move as the server reported it). */
  place(windowId: number, bounds: Rect): void {
    if (windowId) placeIn(this.record(windowId), bounds);
  }

  /**
   * Rectangles to mask for a screenshot: the secret fields of every window in `screen` (the windows on
   * screen at its instant, decision 136) and of the windows the reads went to, each where its window is
   * now (a field is kept relative to its window, so a moved window's fields move with it; a window that
   * moved since the last screenshot is masked at both places, since the screenshot may be from before
   * the move), and the whole of each such window that could not be read (decision 140). `records`: the
   * windows as the listing of `screen` found them (a screenshot is made after its instant, when a
   * window's id may already be another's). Every read in `lookups` is learnt first. A window of the last
   * screenshot not in `screen` has closed: it is masked where it was last this once (the screenshot may
   * be from before it closed). Without `screen` (the windows could not be listed), every window of the
   * last screenshot is masked where it was last.
   */
  masksFor(lookups: Lookup[], screen?: WindowInfo[], records?: Map<number, KnownWindow>): Rect[] {
    for (const l of lookups) if (l.tree) this.learn(l.tree);
    const rec = (id: number): KnownWindow => records?.get(id) ?? this.record(id);
    const where = new Map<KnownWindow, Rect>();
    for (const w of screen ?? []) if (!where.has(rec(w.id))) where.set(rec(w.id), w.bounds);
    for (const l of lookups) {
      const w = l.window ?? l.tree?.window;
      if (w && !where.has(rec(w.id))) where.set(rec(w.id), w.bounds);
    }
    const out = new Map<string, Rect>();
    const add = (r: Rect): void => void out.set(r.join(','), r);
    for (const k of new Set([...this.shown, ...where.keys()])) {
      const b = where.get(k);
      const rects: Rect[] = [];
      if (b) rects.push(b);
      if (k.at && (!b || k.at[0] !== b[0] || k.at[1] !== b[1])) rects.push(k.at);
      if (b) {
        placeIn(k, b);
        k.at = b;
        this.shown.add(k);
      } else if (screen) {
        this.shown.delete(k); // closed: its id may be another window's next
        if (this.current.get(k.id) === k) this.current.delete(k.id);
      }
      for (const r of rects) {
        if (k.unread) add(r);
        for (const [x, y, w, h] of k.fields.values()) add([x + r[0], y + r[1], w, h]);
      }
    }
    for (const [key, r] of out) this.masked.set(key, r);
    return [...out.values()];
  }

  /** A read's secret fields, relative to its window (every rectangle seen is kept: a stale one only masks more). */
  private learn(tree: ReadResult): void {
    const [ox, oy] = tree.window.bounds;
    const k = this.record(tree.window.id);
    for (const [x, y, w, h] of secrets(tree.elements, this.isSecret)) {
      const r: Rect = [x - ox, y - oy, w, h];
      k.fields.set(r.join(','), r);
    }
    k.answered = true;
    k.unread = false;
    placeIn(k, tree.window.bounds);
  }

  /** Whether a secret field was seen in any of these windows (now or before). */
  near(lookups: Lookup[]): boolean {
    const ids = lookups.map((l) => l.window?.id ?? l.tree?.window.id).filter((id) => id !== undefined);
    return (
      ids.some((id) => (this.current.get(id)?.fields.size ?? 0) > 0) ||
      lookups.some((l) => l.tree !== undefined && secrets(l.tree.elements, this.isSecret).length > 0)
    );
  }

  /**
   * The video's masks: every rectangle a screenshot masked, and every place each window had on screen
   * during the recording (its maps and moves between the events too, decision 140), with its secret
   * fields there, or the whole of it where it could not be read; merged into fewer boxes.
   */
  all(): Rect[] {
    const rects = new Map(this.masked);
    for (const k of this.every) for (const r of placesOf(k)) rects.set(r.join(','), r);
    return cover([...rects.values()]);
  }

  /**
   * Every secret field at every place its window had, and every window that could not be read, is
   * covered in the video for its whole length (decision 140: the video's clock and the events' are not
   * the same, so a mask per time span could be late by a frame). A video that cannot be masked is removed; `warn` says so.
   */
  async maskVideo(v: VideoResult, origin: Rect, warn: (m: string) => void): Promise<VideoResult> {
    const [ox, oy] = origin;
    const rects = this.all();
    if (rects.length === 0 || !existsSync(v.file)) return v;
    const error = await maskVideo(
      v.file,
      rects.map(([x, y, w, h]): Rect => [x - ox, y - oy, w, h]),
    );
    if (!error) return { ...v, bytes: statSync(v.file).size, masked: rects.length };
    rmSync(v.file, { force: true });
    warn(`the screen video showed a password field and could not be masked (${error}): it was removed`);
    return { ...v, bytes: 0, complete: false, error: 'removed: its password fields could not be masked' };
  }
}
